"""Class bodies created inside frames: __class__ cells, super(), metaclasses, descriptors."""
from ._registry import case


class Base:
    def greet(self):
        return "base"


@case(2)
def super_and_class_cell(n):
    class Child(Base):
        def greet(self):
            return "child+" + super().greet()

        def cls_name(self):
            return __class__.__name__
    c = Child()
    return c.greet(), c.cls_name(), n


@case(3)
def class_body_scope(n):
    x = n

    class K:
        y = x * 2          # reads the enclosing function's variable
        z = y + 1

        def m(self):
            return x       # methods see the function scope, not the class scope
    return K.y, K.z, K().m()


@case(1)
def init_subclass_hook(n):
    seen = []

    class Root:
        def __init_subclass__(cls, tag=None, **kw):
            super().__init_subclass__(**kw)
            seen.append((cls.__name__, tag))

    class A(Root, tag="a"):
        pass

    class B(A):
        pass
    return seen, n


@case(2)
def set_name_descriptor(n):
    class Field:
        def __set_name__(self, owner, name):
            self.name = name

        def __get__(self, obj, tp=None):
            return self.name * n
    class Rec:
        alpha = Field()
        beta = Field()
    return Rec().alpha, Rec().beta


@case(3)
def metaclass_prepare(n):
    order = []

    class Meta(type):
        @classmethod
        def __prepare__(mcs, name, bases):
            return {"__order__": order}

        def __new__(mcs, name, bases, ns):
            order.extend(k for k in ns if not k.startswith("__"))
            return super().__new__(mcs, name, bases, ns)

    class C(metaclass=Meta):
        b = 1
        a = 2

        def c(self):
            return n
    return order, C().c()


@case(4)
def properties_and_slots(n):
    class P:
        __slots__ = ("_v",)

        def __init__(self, v):
            self._v = v

        @property
        def double(self):
            return self._v * 2

        @double.setter
        def double(self, value):
            self._v = value // 2
    p = P(n)
    before = p.double
    p.double = 20
    try:
        p.other = 1
    except AttributeError:
        slots = "AttributeError"
    return before, p._v, slots


@case(3)
def dataclass_in_frame(n):
    import dataclasses

    @dataclasses.dataclass(order=True)
    class Pt:
        x: int
        y: int = 0
    pts = sorted([Pt(n, 1), Pt(1, n), Pt(n)])
    return [dataclasses.astuple(p) for p in pts], Pt(1) == Pt(1, 0)


@case(2)
def classmethod_staticmethod(n):
    class K:
        factor = n

        @classmethod
        def make(cls, v):
            return v * cls.factor

        @staticmethod
        def plain(v):
            return v + 1
    return K.make(5), K.plain(5), K().make(1)


@case(5)
def dunder_methods(n):
    class Vec:
        def __init__(self, *xs):
            self.xs = xs

        def __add__(self, other):
            return Vec(*(a + b for a, b in zip(self.xs, other.xs)))

        def __len__(self):
            return len(self.xs)

        def __getitem__(self, i):
            return self.xs[i]

        def __eq__(self, other):
            return self.xs == other.xs

        def __iter__(self):
            return iter(self.xs)
    v = Vec(1, 2) + Vec(n, n)
    return list(v), len(v), v[0], v == Vec(1 + n, 2 + n)


@case(2)
def class_decorator(n):
    registry = []

    def register(cls):
        registry.append(cls.__name__)
        cls.tag = n
        return cls

    @register
    class A:
        pass
    return registry, A.tag


@case(3)
def mro_and_diamond(n):
    class A:
        def who(self):
            return ["A"]

    class B(A):
        def who(self):
            return ["B"] + super().who()

    class C(A):
        def who(self):
            return ["C"] + super().who()

    class D(B, C):
        def who(self):
            return ["D"] + super().who()
    return D().who(), [k.__name__ for k in D.__mro__], n


@case(1)
def class_private_names(n):
    class K:
        __secret = n

        def get(self):
            return self.__secret
    return K().get(), hasattr(K, "_K__secret")


@case(2)
def enum_in_frame(n):
    import enum

    class Color(enum.Enum):
        RED = 1
        GREEN = 2
    return Color(n).name, [c.value for c in Color], Color.RED < Color.GREEN if False else None


@case(3)
def nested_class_qualname(n):
    class Outer:
        class Inner:
            pass
    return Outer.Inner.__qualname__.split(".")[-2:], n


@case(4)
def instance_dict_and_getattr(n):
    class Dyn:
        def __getattr__(self, name):
            return name * n
    d = Dyn()
    d.real = 1
    return d.real, d.zz, sorted(vars(d))


@case(2)
def super_in_classmethod(n):
    class A:
        @classmethod
        def make(cls):
            return [cls.__name__]

    class B(A):
        @classmethod
        def make(cls):
            return super().make() + ["B"]
    return B.make(), n
