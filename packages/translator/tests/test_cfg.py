"""The control-flow graph (``bytecode/cfg.py``) and the stack-effect table
(``bytecode/effects.py``), on code the running CPython's compiler wrote: loops, try/except,
with blocks, generators, and a sample of the standard library."""

import ast
import dis
import inspect

import pytest

from framehook.translator.bytecode import ControlFlow, create_instruction, decode
from framehook.translator.bytecode.behaviour import BEHAVIOUR
from framehook.translator.bytecode.kinds import Kind
from framehook.translator.bytecode.effects import call_shape, effect, net_effect
from framehook.translator.bytecode.opcodes import JUMPS, stack_effect
from code_samples import module_code, nested_codes

SAMPLE = [
    "textwrap",
    "argparse",
    "json.decoder",
    "contextlib",
    "asyncio.tasks",
    "string",
]  # modules (string is a package on 3.14+)


def loop_sum(xs):
    total = 0
    for x in xs:
        if x > 0:
            total += x
    return total


def count_down(n):
    while n > 0:
        n -= 1
    return n


def guarded(x):
    try:
        y = 1 / x
    except ZeroDivisionError:
        y = 0
    return y


def managed(cm, x):
    with cm:
        x = x + 1
    return x


def doubles(n):
    for i in range(n):
        yield i * 2


def calls(f, obj, args, kw):
    a = f(1, 2, key=3)
    b = obj.method(a)
    c = f(*args, **kw)
    d = f"{a!r:>10}{b}"
    return [a, b, c, d]


FUNCTIONS = [loop_sum, count_down, guarded, managed, doubles, calls]


# what a compiler may put on a statement's line besides the statement: the implicit
# ``return None`` of a generator (3.9), block set-up and clean-up
_NOT_THE_STATEMENT = (
    "LOAD_CONST",
    "RETURN_VALUE",
    "RETURN_CONST",
    "POP_BLOCK",
    "JUMP_FORWARD",
    "DUP_TOP",
    "CALL_FUNCTION",
    "POP_TOP",
    "NOP",
)


def lines_of(fn, text):
    """Indices of the instructions of ``fn`` that do the work of the (first) source line
    containing ``text``."""
    source, first = inspect.getsourcelines(fn)
    line = first + next(k for k, s in enumerate(source) if text in s)
    flow = ControlFlow(decode(fn.__code__))
    return flow, [
        k for k, inst in enumerate(flow.insts) if inst.lineno == line and inst.opname not in _NOT_THE_STATEMENT
    ]


def sample_codes():
    for fn in FUNCTIONS:
        yield fn.__code__
    for name in SAMPLE:
        yield from nested_codes(module_code(name))


# ---------------------------------------------------------------- edges and blocks
@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_successors_are_fall_through_target_and_handler(fn):
    flow = ControlFlow(decode(fn.__code__))
    for k, inst in enumerate(flow.insts):
        expected = []
        if flow.falls_through(k):
            expected.append(k + 1)
        if inst.target is not None:
            expected.append(flow.index_of(inst.target))
        if inst.exn_tab_entry is not None:
            expected.append(flow.index_of(inst.exn_tab_entry.target))
        assert flow.successors[k] == expected
        for j in flow.successors[k]:
            assert k in flow.predecessors[j]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_blocks_partition_the_instructions_and_carry_the_edges(fn):
    flow = ControlFlow(decode(fn.__code__))
    blocks = flow.blocks
    assert blocks[0].start == 0 and blocks[-1].end == len(flow)
    for a, b in zip(blocks, blocks[1:]):
        assert a.end == b.start > a.start
    starts = {b.start for b in blocks}
    for i, b in enumerate(blocks):
        for k in range(b.start, b.end - 1):
            # inside a block: straight on, under one handler
            assert flow.target(k) is None and flow.falls_through(k)
            assert flow.handler(k) == flow.handler(b.start)
        edges = {
            flow.block_of(j)
            for k in range(b.start, b.end)
            for j in flow.successors[k]
            if not (j == k + 1 and j < b.end)
        }
        assert set(b.successors) == edges
        for s in b.successors:
            assert blocks[s].start in starts and i in blocks[s].predecessors
        assert all(flow.block_of(k) == i for k in range(b.start, b.end))
    for k in range(len(flow)):
        for j in (flow.target(k), flow.handler(k)):
            assert j is None or j in starts


def test_a_try_body_has_its_handler_as_a_successor():
    flow, body = lines_of(guarded, "y = 1 / x")
    _, after = lines_of(guarded, "return y")
    if BEHAVIOUR.exception_table:
        for k in body:
            handler = flow.handler(k)
            assert handler is not None and handler in flow.successors[k]
            assert flow.insts[handler].opname == "PUSH_EXC_INFO"
        assert all(flow.handler(k) is None for k in after)
    else:
        setup = next(k for k, inst in enumerate(flow.insts) if inst.opname == "SETUP_FINALLY")
        assert flow.target(setup) in flow.successors[setup] and setup + 1 in flow.successors[setup]
        assert all(flow.handler(k) is None for k in range(len(flow)))


# ---------------------------------------------------------------- reachability
def test_reachability_from_the_start_skips_dead_code():
    ret = create_instruction("RETURN_VALUE")
    insts = [
        create_instruction("LOAD_CONST", argval=1),
        create_instruction("JUMP_FORWARD", target=ret),
        ret,
        create_instruction("LOAD_CONST", argval=2),
        create_instruction("RETURN_VALUE"),
    ]
    flow = ControlFlow(insts)
    assert flow.live == [True, True, True, False, False]
    assert flow.reachable_from(3) == {3, 4}
    assert ControlFlow([]).live == []


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_whole_compiled_functions_are_live(fn):
    flow = ControlFlow(decode(fn.__code__))
    live = flow.live
    # every instruction the compiler keeps is reachable, or a pad that never runs
    assert all(ok or inst.opname in ("NOP", "CACHE") for ok, inst in zip(live, flow.insts))
    assert flow.reachable_from(0) == {k for k, ok in enumerate(live) if ok}


def test_reachability_not_passing_a_stop_keeps_to_the_loop():
    flow = ControlFlow(decode(loop_sum.__code__))
    head = next(k for k, inst in enumerate(flow.insts) if inst.opname == "FOR_ITER")
    exit_ = flow.target(head)
    region = flow.reachable_from(head, exit_)
    assert exit_ not in region and head in region
    assert all(head <= k < exit_ for k in region)
    back = [k for k in region if flow.target(k) == head]
    assert back, "the jump back to the loop's head is in the loop"
    # without the stop, the walk runs on to the return
    assert exit_ in flow.reachable_from(head)


# ---------------------------------------------------------------- loops
@pytest.mark.parametrize(
    "fn,inside,outside",
    [
        (loop_sum, "total += x", "return total"),
        (count_down, "n -= 1", "return n"),
        (doubles, "yield i * 2", None),
    ],
)
def test_loops_cover_their_bodies(fn, inside, outside):
    flow, body = lines_of(fn, inside)
    assert body and all(flow.in_cycle[k] for k in body)
    heads = set.union(*(flow.loop_heads[k] for k in body))
    for h in heads:
        # a head is where a jump back lands, and is itself on the loop
        assert any(flow.target(k) == h and k >= h for k in range(len(flow)))
        assert h in flow.loop_heads[h]
    if outside is not None:
        _, after = lines_of(fn, outside)
        assert not any(flow.in_cycle[k] for k in after)


def test_a_handler_placed_after_the_return_is_no_loop():
    flow = ControlFlow(decode(guarded.__code__))
    assert not any(flow.in_cycle)
    assert not any(flow.loop_heads)


def nested(n, m):
    s = 0
    for i in range(n):
        for j in range(m):
            s += i * j
        s -= i
    return s


def with_break(xs):
    y = 0
    for x in xs:
        if x:
            break
        y += 1
    return y


def with_continue(xs):
    y = 0
    for x in xs:
        if x:
            continue
        y += 1
    return y


def nested_while(n):
    while n > 0:
        k = n
        while k > 0:
            k -= 1
        n -= 1
    return n


def first_of(fn, text):
    """The flow of ``fn`` and the index of the first instruction on the (first) source line
    starting with ``text``."""
    source, first = inspect.getsourcelines(fn)
    line = first + next(k for k, s in enumerate(source) if s.strip().startswith(text))
    flow = ControlFlow(decode(fn.__code__))
    return flow, min(k for k, inst in enumerate(flow.insts) if inst.lineno == line)


def for_heads(flow):
    return [k for k, inst in enumerate(flow.insts) if inst.kind == Kind.FOR_ITER]


@pytest.mark.parametrize("fn", FUNCTIONS + [nested, with_break, with_continue, nested_while], ids=lambda f: f.__name__)
def test_loop_heads_are_the_targets_of_back_edges(fn):
    flow = ControlFlow(decode(fn.__code__))
    for u, v in flow.back_edges:
        assert v <= u and v in flow.successors[u] and u in flow.reachable_from(v)
    assert flow.heads == {v for _, v in flow.back_edges}
    for h in flow.heads:
        # a head is on its own loop, by either body
        assert h in flow.loop_heads[h] and h in flow.natural_loop_heads[h]
    for k in range(len(flow)):
        # a natural loop is a part of the cycles through its back edge
        assert flow.natural_loop_heads[k] <= flow.loop_heads[k] <= flow.heads
    assert flow.in_cycle == [bool(h) for h in flow.loop_heads]


def test_for_loop_heads_are_their_for_iters():
    for fn in (loop_sum, with_break, with_continue):
        flow = ControlFlow(decode(fn.__code__))
        assert flow.heads == set(for_heads(flow)), fn.__name__  # a continue jumps to the head too
    flow = ControlFlow(decode(nested.__code__))
    assert flow.heads == set(for_heads(flow)) and len(flow.heads) == 2


def test_a_nested_loop_is_a_natural_loop_of_its_own():
    outer, inner = for_heads(ControlFlow(decode(nested.__code__)))
    flow, body = first_of(nested, "s += i * j")
    assert flow.natural_loop_heads[body] == {outer, inner} == flow.loop_heads[body]
    _, after_inner = first_of(nested, "s -= i")
    # the rest of the outer body is on a cycle through the inner head, not in its natural loop
    assert flow.natural_loop_heads[after_inner] == {outer}
    assert flow.loop_heads[after_inner] == {outer, inner}
    _, ret = first_of(nested, "return s")
    assert not flow.natural_loop_heads[ret] and not flow.loop_heads[ret]


def test_nested_while_loops_have_two_heads():
    flow, inner_body = first_of(nested_while, "k -= 1")
    _, outer_body = first_of(nested_while, "k = n")
    _, ret = first_of(nested_while, "return n")
    assert len(flow.heads) == 2
    (inner,) = flow.natural_loop_heads[inner_body] - flow.natural_loop_heads[outer_body]
    assert flow.natural_loop_heads[inner_body] == flow.heads
    assert len(flow.natural_loop_heads[outer_body]) == 1 and inner in flow.loop_heads[outer_body]
    assert not flow.natural_loop_heads[ret] and not flow.in_cycle[ret]


def test_a_break_leaves_the_loop_and_a_continue_stays_in_it():
    flow, brk = first_of(with_break, "break")
    (head,) = for_heads(flow)
    _, body = first_of(with_break, "y += 1")
    assert flow.natural_loop_heads[body] == {head}
    # the break's own code (an iterator pop and a jump out) runs once: no loop holds it
    gone = [k for k in range(brk, len(flow)) if flow.insts[k].lineno == flow.insts[brk].lineno]
    assert gone and not any(flow.natural_loop_heads[k] or flow.loop_heads[k] for k in gone)
    flow, cont = first_of(with_continue, "continue")
    (head,) = for_heads(flow)
    assert flow.natural_loop_heads[cont] == {head} == flow.loop_heads[cont]


# ---------------------------------------------------------------- liveness
def straight(a, b):
    c = a + 1
    a = 2
    return a + b + c


def temporaries(xs):
    total = 0
    tmp = None
    for x in xs:
        tmp = x * 2
        total += tmp
    return total


def deletes(a, b):
    del a
    b = 1
    return b


def test_liveness_on_straight_code():
    flow, k = first_of(straight, "c = a + 1")
    assert flow.live_locals[0] == flow.live_locals[k] == {"a", "b"}
    _, k = first_of(straight, "a = 2")
    assert flow.live_locals[k] == {"b", "c"}  # ``a`` is stored before it is read again
    _, k = first_of(straight, "return a + b + c")
    assert flow.live_locals[k] == {"a", "b", "c"}
    assert flow.live_locals[-1] == set()


def test_liveness_in_a_loop():
    flow = ControlFlow(decode(temporaries.__code__))
    (head,) = for_heads(flow)
    # the running total is read again each time round; the temporary and the loop
    # variable are stored before any read
    assert flow.live_locals[head] == {"total"}
    _, k = first_of(temporaries, "tmp = None")
    assert flow.live_locals[k] == {"total", "xs"}
    _, k = first_of(temporaries, "total = 0")
    assert flow.live_locals[k] == {"xs"}
    _, k = first_of(temporaries, "total += tmp")
    assert flow.live_locals[k] == {"tmp", "total"}


def test_a_delete_reads_and_a_store_kills():
    flow, k = first_of(deletes, "del a")
    assert flow.live_locals[k] == {"a"}
    _, k = first_of(deletes, "b = 1")
    assert flow.live_locals[k] == set()


@pytest.mark.parametrize("fn", FUNCTIONS + [nested, temporaries], ids=lambda f: f.__name__)
def test_liveness_of_a_block_is_that_of_its_first_instruction(fn):
    flow = ControlFlow(decode(fn.__code__))
    for i, b in enumerate(flow.blocks):
        assert flow.live_at_block(i) == flow.live_locals[b.start]
    assert flow.live_locals is flow.live_locals  # kept on the graph


# ---------------------------------------------------------------- stack depth
@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_depths_follow_every_edge(fn):
    flow = ControlFlow(decode(fn.__code__))
    depths = flow.stack_depths
    # 3.10's generators start with the sent value pushed, for GEN_START to pop
    assert depths[0] == (1 if flow.insts[0].opname == "GEN_START" else 0)
    for k, inst in enumerate(flow.insts):
        if k not in depths:
            continue
        d = depths[k]
        assert 0 <= d <= flow.stacksize
        if flow.falls_through(k):
            assert depths[k + 1] == d + net_effect(inst, jump=False if inst.opcode in JUMPS else None)
        if inst.target is not None:
            assert depths[flow.target(k)] == d + net_effect(inst, jump=True)
        entry = inst.exn_tab_entry
        if entry is not None:
            assert depths[flow.handler(k)] == entry.depth + 1 + int(entry.lasti)
    assert flow.stacksize <= fn.__code__.co_stacksize
    returns = [k for k, inst in enumerate(flow.insts) if inst.opname == "RETURN_VALUE" and k in depths]
    assert all(depths[k] == 1 for k in returns)


def test_depth_at_a_loop_head_holds_the_iterator():
    flow = ControlFlow(decode(loop_sum.__code__))
    head = next(k for k, inst in enumerate(flow.insts) if inst.opname == "FOR_ITER")
    assert flow.stack_depths[head] == (2 if BEHAVIOUR.iterators_take_two_slots else 1)


def test_a_generator_resumes_with_the_sent_value():
    flow = ControlFlow(decode(doubles.__code__))
    first = flow.insts[0].opname
    if first in ("RETURN_GENERATOR", "GEN_START"):
        after = 1 if first == "RETURN_GENERATOR" else 0
        assert flow.stack_depths[after] == 1  # POP_TOP (3.11+) or GEN_START (3.10) pops it
    _, body = lines_of(doubles, "yield i * 2")
    assert all(flow.stack_depths[k] >= 1 for k in body)  # the range iterator is under the yield


# ---------------------------------------------------------------- exception regions
@pytest.mark.parametrize(
    "fn,inside,outside",
    [
        (guarded, "y = 1 / x", "return y"),
        (managed, "x = x + 1", "return x"),
    ],
)
def test_protected_regions(fn, inside, outside):
    flow, body = lines_of(fn, inside)
    _, after = lines_of(fn, outside)
    assert body and all(flow.protected[k] for k in body)
    assert after and not any(flow.protected[k] for k in after)


def test_nothing_is_protected_without_a_try():
    for fn in (loop_sum, count_down, calls):
        assert not any(ControlFlow(decode(fn.__code__)).protected)


# ---------------------------------------------------------------- the stack-effect table
def _dis_effect(inst, jump=None):
    return stack_effect(inst.opcode, inst.arg, jump=jump)


def test_the_table_agrees_with_dis_on_real_code():
    checked = 0
    for code in sample_codes():
        insts = decode(code)
        for k, inst in enumerate(insts):
            found = effect(inst)
            if found is None:
                assert net_effect(inst) == _dis_effect(inst)
                continue
            checked += 1
            if inst.opname == "RETURN_GENERATOR" and BEHAVIOUR.return_generator_effect_omits_sent:
                assert found.net == _dis_effect(inst) + 1
            elif BEHAVIOUR.precall_before_call and inst.opname in ("PRECALL", "CALL"):
                # 3.11's dis counts the arguments at PRECALL; the table pops the whole call at CALL
                if inst.opname == "CALL":
                    precall = insts[k - 1]
                    assert precall.opname == "PRECALL"
                    assert effect(precall).net + found.net == _dis_effect(precall) + _dis_effect(inst)
            else:
                assert found.net == _dis_effect(inst), (code.co_name, inst)
    assert checked > 1000


_MATCHES = """
def matches(subject):
    match subject:
        case [0, *rest] if rest:
            return rest
        case {"k": v, **others}:
            return v, others
        case complex(real=r, imag=0.0):
            return r
        case str() | bytes() as text:
            return text
    return None
"""


@pytest.mark.skipif(not hasattr(ast, "Match"), reason="match statements are 3.10+")
def test_the_table_agrees_with_dis_on_match_statements():
    # subject-keeping instructions (GET_LEN, MATCH_*) never appear in the other samples
    ns = {}
    exec(compile(_MATCHES, "<matches>", "exec"), ns)
    insts = decode(ns["matches"].__code__)
    assert any(i.opname == "GET_LEN" for i in insts)
    for inst in insts:
        if effect(inst) is not None:
            assert effect(inst).net == _dis_effect(inst), inst
        assert net_effect(inst) == _dis_effect(inst), inst
    assert ControlFlow(insts).stacksize <= ns["matches"].__code__.co_stacksize
    assert [ns["matches"](v) for v in ([0, 1], {"k": 1}, 2 + 0j, b"x", [1])] == [[1], (1, {}), 2.0, b"x", None]


def test_call_shapes_count_every_slot():
    seen = set()
    for code in sample_codes():
        for inst in decode(code):
            shape = call_shape(inst)
            if shape is None:
                continue
            seen.add(inst.opname)
            assert effect(inst) == (shape.pops, 1)
            n = inst.arg or 0
            if inst.opname == "CALL_FUNCTION_EX":
                assert shape.args == 1 and shape.kwargs == inst.call_kwargs
                assert shape.callable_slots == (2 if BEHAVIOUR.call_ex_pops_null_slot else 1)
            else:
                assert shape.args == n
                assert shape.kw_names_slot == inst.opname.endswith("_KW")
                assert shape.callable_slots == (1 if inst.opname.startswith("CALL_FUNCTION") else 2)
    assert "CALL_FUNCTION_EX" in seen
    assert seen & {"CALL", "CALL_FUNCTION"}


def test_loads_count_the_null_slot_they_push():
    flow = ControlFlow(decode(calls.__code__))
    for inst in flow.insts:
        if inst.opname in ("LOAD_GLOBAL", "LOAD_ATTR"):
            pops = 1 if inst.opname == "LOAD_ATTR" else 0
            assert effect(inst) == (pops, 1 + int(inst.push_null))
        if inst.opname == "FORMAT_VALUE":
            assert effect(inst).pops == 1 + int(inst.format_spec)
    spec = [inst for inst in flow.insts if inst.opname in ("FORMAT_VALUE", "FORMAT_WITH_SPEC") and inst.format_spec]
    assert spec, "the f-string with a format spec pops it"
    if BEHAVIOUR.calls_push_null:
        assert any(inst.push_null for inst in flow.insts)


def test_unknown_opcodes_fall_back_to_dis():
    inst = create_instruction("POP_TOP")
    assert effect(inst) is None and net_effect(inst) == dis.stack_effect(inst.opcode) == -1


def test_instructions_that_resume_alone_have_effects():
    # a break at one of them reruns it alone, its pops and pushes read from the table: a
    # missing entry (3.14's LOAD_COMMON_CONSTANT once) failed the whole translation
    from framehook.translator.bytecode import effects, kinds
    from framehook.translator.symbolic import resume

    from framehook.translator.bytecode.kinds import DECODE

    # every spelling of the kinds in the set, and 3.14+'s AssertionError load
    here = [n for n, k in DECODE.items() if k in resume._RESUMES_ALONE and not n.startswith("INSTRUMENTED_")]
    here += [n for n in dis.opmap if n == "LOAD_COMMON_CONSTANT"]
    assert here, "no instruction of the set exists on this version"
    assert [name for name in here if kinds.DECODE[name] not in effects._EFFECTS] == []


def test_protected_regions_of_a_body_with_annotations():
    # SETUP_ANNOTATIONS (3.9/3.10 class and module bodies) pushes no block: it once
    # read as one and the walk failed on its missing handler
    source = "class C:\n    x: int = 1\n    try:\n        y = 2\n    except ValueError:\n        y = 3\n"
    body = next(c for c in compile(source, "<t>", "exec").co_consts if hasattr(c, "co_code"))
    insts = decode(body)
    protected = ControlFlow(insts).protected
    assert len(protected) == len(insts)
    store = {inst.argval: k for k, inst in reversed(list(enumerate(insts))) if inst.kind == Kind.STORE_NAME}
    assert protected[store["y"]] and not protected[store["x"]]
