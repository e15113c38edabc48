"""Coroutines and async generators, driven without an event loop."""
import types

from ._registry import case


class Ticket:
    """An awaitable that yields its value to the driver and returns twice it."""

    def __init__(self, value):
        self.value = value

    def __await__(self):
        yield self.value
        return self.value * 2


@types.coroutine
def _legacy(v):
    yield ("legacy", v)
    return v + 1


async def _double(x):
    return await Ticket(x)


@case(3)
async def simple_coroutine(n):
    a = await Ticket(n)
    b = await Ticket(a)
    return a + b


@case(2)
async def coroutine_calls_coroutine(n):
    return await _double(n) + await _double(n + 1)


@case(4)
async def coroutine_exception(n):
    try:
        await Ticket(n)
        raise KeyError(n)
    except KeyError as e:
        return ("caught", e.args[0])


@case(1)
async def coroutine_legacy_await(n):
    return await _legacy(n)


@case(3)
async def async_for_over_agen(n):
    async def agen():
        for i in range(n):
            await Ticket(i)
            yield i * 10
    out = []
    async for v in agen():
        out.append(v)
    return out


@case(3)
async def async_comprehension(n):
    async def agen():
        for i in range(n):
            yield i
    return [i async for i in agen()], {i: await Ticket(i) for i in range(2)}


@case(2)
async def async_with(n):
    log = []

    class Ctx:
        async def __aenter__(self):
            log.append("enter")
            await Ticket("in")
            return n

        async def __aexit__(self, *exc):
            log.append("exit")
            return False
    async with Ctx() as v:
        log.append(v)
    return log


@case(3)
async def async_gen_direct(n):
    # The recorded function is itself a coroutine returning an aggregate.
    total = 0
    for i in range(n):
        total += await Ticket(i)
    return total


@case(2)
async def async_generator_case(n):
    for i in range(n):
        yield await Ticket(i)
    yield "end"


@case(3)
async def await_in_try_finally(n):
    log = []
    try:
        log.append(await Ticket(n))
        return log
    finally:
        log.append("finally")


@case(2)
async def coroutine_closure(n):
    factor = n

    async def scaled(x):
        return await Ticket(x * factor)
    return [await scaled(i) for i in range(3)]


@case(1)
async def coroutine_raises_out(n):
    await Ticket(n)
    raise ValueError("boom", n)
