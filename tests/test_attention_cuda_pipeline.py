"""The synchronisation of the hand-written CUDA attention kernels, played out on a CPU.

Each kernel's roles (producer, consumers or MMA issuer and softmax) are written here as Python generators
that make the same mbarrier waits and arrivals, named-barrier turns, TMA copies and tensor-core operations
as the kernels do, in the same order (attention_fwd_wgmma.cu, attention_fwd_tcgen05.cu beside the
reference). A scheduler interleaves them at random, completes TMA copies and runs queued tensor-core work
in order at random moments, and checks what a GPU run could not show us here: every wait passes on the
phase it means (never one two phases on, which a parity wait cannot tell apart), no copy or MMA writes a
buffer someone still reads, every read finds the data it expects, nothing deadlocks, and no barrier is
left half-arrived at the end. The work items come from the kernels' pair order.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field

import pytest

Step = Generator[Callable[[], bool], None, None]


class ProtocolError(AssertionError):
    pass


@dataclass
class MBarrier:
    name: str
    count: int
    pending: int = 0
    tx: int = 0
    completed: int = 0

    def __post_init__(self) -> None:
        self.pending = self.count

    def arrive(self, n: int = 1) -> None:
        self.pending -= n
        if self.pending < 0:
            raise ProtocolError(f"{self.name}: more arrivals than its count {self.count}")
        self._settle()

    def expect_tx(self, nbytes: int) -> None:
        self.tx += nbytes
        self.arrive()

    def complete_tx(self, nbytes: int) -> None:
        self.tx -= nbytes
        self._settle()

    def _settle(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.completed += 1
            self.pending = self.count

    def passed(self, parity: int) -> bool:
        """try_wait.parity: the phase of that parity has completed (the current phase has the other)."""
        return (self.completed & 1) != parity


def wait(bar: MBarrier, n: int) -> Step:
    """Wait for the barrier's n-th completion (from 0) as the kernels do: by its parity, n & 1."""
    yield lambda: bar.passed(n & 1)
    if bar.completed != n + 1:
        raise ProtocolError(f"{bar.name}: a wait for completion {n + 1} passed at completion {bar.completed}")


@dataclass
class NamedBarrier:
    """bar.sync / bar.arrive with 256 threads: two warpgroups of 128."""
    arrived: int = 0
    generation: int = 0

    def add(self) -> None:
        self.arrived += 128
        if self.arrived == 256:
            self.arrived, self.generation = 0, self.generation + 1


def bar_sync(bar: NamedBarrier) -> Step:
    generation = bar.generation
    bar.add()
    yield lambda: bar.generation > generation


@dataclass
class Buffer:
    name: str
    tag: object = None
    holders: set = field(default_factory=set)
    read: object = None

    def write(self, tag: object, by: str) -> None:
        if self.holders:
            raise ProtocolError(f"{by} overwrote {self.name} ({self.tag}) while {sorted(self.holders)} "
                                "read it")
        self.tag = tag

    def take(self, who: str, expect: object) -> None:
        if self.tag != expect:
            raise ProtocolError(f"{who} found {self.tag} in {self.name}, expected {expect}")
        self.holders.add(who)

    def drop(self, who: str) -> None:
        self.holders.discard(who)


class Machine:
    """Runs the roles to the end in a random interleaving with the asynchronous copies and MMAs."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.copies: list[Callable[[], None]] = []
        self.tensor_core: list[Callable[[], None]] = []   # executes in issue order

    def tma(self, buffer: Buffer, tag: object, bar: MBarrier, nbytes: int) -> None:
        def land() -> None:
            buffer.write(tag, "TMA")
            bar.complete_tx(nbytes)
        self.copies.append(land)

    def run(self, roles: list[Step], limit: int = 200_000) -> None:
        live: list[tuple[Iterator, Callable[[], bool]]] = []
        for role in roles:
            try:
                live.append((role, next(role)))
            except StopIteration:
                pass
        for _ in range(limit):
            ready = [i for i, (_, ok) in enumerate(live) if ok()]
            choices = [("role", i) for i in ready] + [("copy", i) for i in range(len(self.copies))]
            if self.tensor_core:
                choices.append(("mma", 0))
            if not choices:
                if live:
                    raise ProtocolError(f"deadlock: {len(live)} roles wait and nothing is in flight")
                return
            kind, i = self.rng.choice(choices)
            if kind == "copy":
                self.copies.pop(i)()
            elif kind == "mma":
                self.tensor_core.pop(0)()
            else:
                role, _ = live[i]
                try:
                    live[i] = (role, next(role))
                except StopIteration:
                    live.pop(i)
        raise ProtocolError("did not finish")


def pair_item(u: int, slot: int, nmb: int) -> tuple[int, int] | None:
    """The kernels' pair_item: item `slot` of pair u, or None where the pair has one."""
    per_head = (nmb + 1) // 2
    bh, p = divmod(u, per_head)
    mb = nmb - 1 - p if slot == 0 else p
    return (bh, mb) if slot == 0 or p != nmb - 1 - p else None


def block_items(block: int, grid: int, heads: int, nmb: int) -> list[tuple[int, int]]:
    pairs = heads * ((nmb + 1) // 2)
    return [item for u in range(block, pairs, grid) for slot in (0, 1) if (item := pair_item(u, slot, nmb))]


# ---- sm_90a: one producer, two consumer warpgroups ------------------------------------------------------

TILE = 32768


def hopper(machine: Machine, items: list, nmb: int, causal: bool, stages: int, overlap: bool, pingpong: bool,
           bug: str = "") -> tuple[list[Step], list]:
    q = Buffer("Q")
    k = [Buffer(f"K[{s}]") for s in range(stages)]
    v = [Buffer(f"V[{s}]") for s in range(stages)]
    q_full, q_empty = MBarrier("q_full", 1), MBarrier("q_empty", 8)
    k_full = [MBarrier(f"k_full[{s}]", 1) for s in range(stages)]
    v_full = [MBarrier(f"v_full[{s}]", 1) for s in range(stages)]
    empty = [MBarrier(f"empty[{s}]", 8) for s in range(stages)]
    turns = {1: NamedBarrier(), 2: NamedBarrier()}
    done: list = []

    def n_kv(mb: int) -> int:
        return mb + 1 if causal else nmb

    def producer() -> Step:
        it = 0
        for n_items, (bh, mb) in enumerate(items):
            if n_items > 0 and bug != "q refilled early":
                yield from wait(q_empty, n_items - 1)
            q_full.expect_tx(TILE)
            machine.tma(q, (bh, mb), q_full, TILE)
            for kb in range(n_kv(mb)):
                s = it % stages
                if it >= stages and bug != "stage refilled early":
                    yield from wait(empty[s], it // stages - 1)
                k_full[s].expect_tx(TILE)
                machine.tma(k[s], (bh, kb), k_full[s], TILE)
                v_full[s].expect_tx(TILE)
                machine.tma(v[s], (bh, kb), v_full[s], TILE)
                it += 1
            yield lambda: True

    def consumer(c: int) -> Step:
        me, mine, theirs = f"consumer {c}", 1 + c, 2 - c

        def turn() -> Step:   # the GEMMs of one issue point, in turn with the other consumer
            if pingpong:
                yield from bar_sync(turns[mine])
            yield lambda: True
            if pingpong:
                turns[theirs].add()

        def release(s: int) -> None:
            k[s].drop(me)
            v[s].drop(me)
            empty[s].arrive(4)

        if pingpong and c == 1:
            turns[1].add()
        it = 0
        for n_items, (bh, mb) in enumerate(items):
            n = n_kv(mb)
            yield from wait(q_full, n_items)
            q.take(me, (bh, mb))
            if overlap:
                s0 = it % stages
                yield from wait(k_full[s0], it // stages)
                k[s0].take(me, (bh, 0))
                yield from turn()
                if n == 1:
                    q.drop(me)
                    q_empty.arrive(4)
                for kb in range(1, n):
                    prev, cur = (it + kb - 1) % stages, (it + kb) % stages
                    yield from wait(k_full[cur], (it + kb) // stages)
                    k[cur].take(me, (bh, kb))
                    yield from wait(v_full[prev], (it + kb - 1) // stages)
                    v[prev].take(me, (bh, kb - 1))
                    yield from turn()
                    if kb == n - 1:
                        q.drop(me)
                        q_empty.arrive(4)
                    release(prev)
                last = (it + n - 1) % stages
                yield from wait(v_full[last], (it + n - 1) // stages)
                v[last].take(me, (bh, n - 1))
                yield from turn()
                release(last)
            else:
                for kb in range(n):
                    cur = (it + kb) % stages
                    yield from wait(k_full[cur], (it + kb) // stages)
                    k[cur].take(me, (bh, kb))
                    yield from turn()
                    if kb == n - 1:
                        q.drop(me)
                        q_empty.arrive(4)
                    yield from wait(v_full[cur], (it + kb) // stages)
                    v[cur].take(me, (bh, kb))
                    yield from turn()
                    release(cur)
            it += n
            done.append((c, bh, mb))
        if pingpong and c == 0 and bug != "no last turn":
            yield from bar_sync(turns[1])

    barriers = [q_full, q_empty, *k_full, *v_full, *empty]
    return [producer(), consumer(0), consumer(1)], [barriers, turns, done]


def play_hopper(seed: int, heads: int, nmb: int, causal: bool, stages: int, overlap: bool, pingpong: bool,
                block: int = 0, grid: int = 1, bug: str = "") -> None:
    machine = Machine(seed)
    items = block_items(block, grid, heads, nmb)
    roles, (barriers, turns, done) = hopper(machine, items, nmb, causal, stages, overlap, pingpong, bug)
    machine.run(roles)
    assert sorted(done) == sorted((c, bh, mb) for c in (0, 1) for bh, mb in items)
    assert [b.name for b in barriers if b.pending != b.count or b.tx] == []
    assert all(t.arrived == 0 for t in turns.values()), "a named barrier is left with arrivals pending"


CAUGHT = "overwrote|found|more arrivals|passed at completion"
"""What a broken protocol shows as (not a deadlock, which the model also reports)."""
HOPPER = [(stages, overlap, pingpong) for stages in (2, 3) for overlap in (True, False)
          for pingpong in (True, False)]


@pytest.mark.parametrize(("stages", "overlap", "pingpong"), HOPPER)
@pytest.mark.parametrize("causal", [False, True])
def test_the_hopper_pipeline_keeps_its_phases_and_buffers(stages, overlap, pingpong, causal):
    for seed in range(6):
        for heads, nmb, block, grid in ((1, 1, 0, 1), (2, 3, 0, 1), (1, 5, 0, 1), (3, 4, 1, 2)):
            play_hopper(seed, heads, nmb, causal, stages, overlap, pingpong, block, grid)


def test_the_hopper_model_sees_a_turn_left_pending():
    """Without consumer 0's last bar.sync, consumer 1's last bar.arrive stays pending at the exit."""
    with pytest.raises(AssertionError, match="named barrier is left"):
        play_hopper(0, 2, 4, False, 2, True, True, bug="no last turn")


@pytest.mark.parametrize("bug", ["stage refilled early", "q refilled early"])
def test_the_hopper_model_catches_a_producer_that_does_not_wait(bug):
    with pytest.raises(ProtocolError, match=CAUGHT):
        for seed in range(20):
            play_hopper(seed, 2, 4, False, 2, True, True, bug=bug)


# ---- sm_100a: producer, MMA issuer, softmax warpgroup ---------------------------------------------------

def blackwell(machine: Machine, items: list, nmb: int, causal: bool, stages: int, bug: str = "",
              ) -> tuple[list[Step], list]:
    q, p_buf, o_acc = Buffer("Q"), Buffer("P"), Buffer("O")
    k = [Buffer(f"K[{s}]") for s in range(stages)]
    v = [Buffer(f"V[{s}]") for s in range(stages)]
    s_buf = [Buffer(f"S[{b}]") for b in range(2)]
    q_full, q_empty = MBarrier("q_full", 1), MBarrier("q_empty", 1)
    k_full = [MBarrier(f"k_full[{s}]", 1) for s in range(stages)]
    v_full = [MBarrier(f"v_full[{s}]", 1) for s in range(stages)]
    kv_empty = [MBarrier(f"kv_empty[{s}]", 1) for s in range(stages)]
    s_full = [MBarrier(f"s_full[{b}]", 1) for b in range(2)]
    p_full, pv_done = MBarrier("p_full", 128), MBarrier("pv_done", 1)
    o_empty = MBarrier("o_empty", 128)
    done: list = []

    def n_kv(mb: int) -> int:
        return mb + 1 if causal else nmb

    def producer() -> Step:
        it = 0
        for n_items, (bh, mb) in enumerate(items):
            if n_items > 0:
                yield from wait(q_empty, n_items - 1)
            q_full.expect_tx(TILE)
            machine.tma(q, (bh, mb), q_full, TILE)
            for kb in range(n_kv(mb)):
                s = it % stages
                if it >= stages:
                    yield from wait(kv_empty[s], it // stages - 1)
                k_full[s].expect_tx(TILE)
                machine.tma(k[s], (bh, kb), k_full[s], TILE)
                v_full[s].expect_tx(TILE)
                machine.tma(v[s], (bh, kb), v_full[s], TILE)
                it += 1
            yield lambda: True

    def commit(bar: MBarrier, then: Callable[[], None] = lambda: None) -> None:
        machine.tensor_core.append(lambda: (then(), bar.arrive()))

    def mma() -> Step:
        x = 0
        state = {"items": 0}

        def s_op(y: int, bh: int, mb: int, kb: int, s: int) -> Callable[[], None]:
            def run() -> None:
                q.take("mma", (bh, mb))
                k[s].take("mma", (bh, kb))
                buf = s_buf[y % 2]
                if buf.tag is not None and buf.read != buf.tag:
                    raise ProtocolError(f"S({y}) overwrote S({buf.tag}) before the softmax read it")
                buf.write(y, f"S({y})")
            return run

        def pv_op(y: int, bh: int, kb: int, s: int, first: bool) -> Callable[[], None]:
            def run() -> None:
                p_buf.take("mma", y)
                p_buf.drop("mma")
                p_buf.read = y
                v[s].take("mma", (bh, kb))
                if first:
                    if o_acc.tag is not None and o_acc.read != o_acc.tag:
                        raise ProtocolError(f"PV({y}) overwrote O before the softmax stored it")
                    o_acc.write((y, y), f"PV({y})")
                else:
                    if o_acc.tag[1] != y - 1:
                        raise ProtocolError(f"PV({y}) accumulated onto O of blocks {o_acc.tag}")
                    o_acc.write((o_acc.tag[0], y), f"PV({y})")
            return run

        def release(s: int) -> None:
            k[s].drop("mma")
            v[s].drop("mma")

        def pv(y: int, first: bool, bh: int, kb: int) -> Step:
            if bug != "p not awaited":
                yield from wait(p_full, y)
            if first and state["items"] > 0:
                yield from wait(o_empty, state["items"] - 1)
            s = y % stages
            yield from wait(v_full[s], y // stages)
            machine.tensor_core.append(pv_op(y, bh, kb, s, first))
            commit(kv_empty[s], lambda: release(s))
            commit(pv_done)

        for bh, mb in items:
            n = n_kv(mb)
            yield from wait(q_full, state["items"])
            for kb in range(n):
                y, s = x + kb, (x + kb) % stages
                yield from wait(k_full[s], y // stages)
                machine.tensor_core.append(s_op(y, bh, mb, kb, s))
                commit(s_full[y % 2])
                if kb == n - 1:
                    commit(q_empty, lambda: q.drop("mma"))
                if kb > 0:
                    yield from pv(y - 1, kb == 1, bh, kb - 1)
            yield from pv(x + n - 1, n == 1, bh, n - 1)
            x += n
            state["items"] += 1

    def softmax() -> Step:
        x = 0
        for bh, mb in items:
            n = n_kv(mb)
            for kb in range(n):
                y = x + kb
                yield from wait(s_full[y % 2], y // 2)
                s_buf[y % 2].take("softmax", y)
                if kb > 0:
                    if bug != "p written early":
                        yield from wait(pv_done, y - 1)
                    o_acc.take("softmax", (x, y - 1))   # the rescale reads and writes O
                    o_acc.drop("softmax")
                if p_buf.tag is not None and p_buf.read != p_buf.tag:
                    raise ProtocolError(f"P({y}) overwrote P({p_buf.tag}) before O += P V read it")
                p_buf.write(y, "softmax")
                s_buf[y % 2].read = y
                s_buf[y % 2].drop("softmax")
                yield lambda: True
                p_full.arrive(128)
            yield from wait(pv_done, x + n - 1)
            o_acc.take("softmax", (x, x + n - 1))
            o_acc.read = o_acc.tag
            o_acc.drop("softmax")
            done.append((bh, mb))
            o_empty.arrive(128)
            x += n

    barriers = [q_full, q_empty, *k_full, *v_full, *kv_empty, *s_full, p_full, pv_done, o_empty]
    return [producer(), mma(), softmax()], [barriers, done]


def play_blackwell(seed: int, heads: int, nmb: int, causal: bool, block: int = 0, grid: int = 1,
                   bug: str = "") -> None:
    machine = Machine(seed)
    items = block_items(block, grid, heads, nmb)
    roles, (barriers, done) = blackwell(machine, items, nmb, causal, 2, bug)
    machine.run(roles)
    assert done == items
    assert not machine.tensor_core and not machine.copies
    assert [b.name for b in barriers if b.pending != b.count or b.tx] == []


@pytest.mark.parametrize("causal", [False, True])
def test_the_blackwell_pipeline_keeps_its_phases_and_buffers(causal):
    for seed in range(25):
        for heads, nmb, block, grid in ((1, 1, 0, 1), (2, 3, 0, 1), (1, 5, 0, 1), (3, 4, 1, 2)):
            play_blackwell(seed, heads, nmb, causal, block, grid)


@pytest.mark.parametrize("bug", ["p written early", "p not awaited"])
def test_the_blackwell_model_catches_a_missing_wait(bug):
    with pytest.raises(ProtocolError, match=CAUGHT):
        for seed in range(40):
            play_blackwell(seed, 2, 3, False, bug=bug)


def test_the_items_a_block_walks_are_the_hosts_schedule():
    """The device's pair order (translated above) is the order the host's `schedule` reports."""
    from warpgym.tasks.spec import SOLUTIONS_DIR

    path = SOLUTIONS_DIR / "ptx" / "attention-fwd-cuda" / "attention-fwd-cuda.py"
    source = path.read_text().split("\nCONFIG, KERNEL = ")[0]   # the order alone, without building kernels
    namespace: dict = {}
    exec(compile(source, str(path), "exec"), namespace)  # noqa: S102 - our own file
    for heads, nmb in ((1, 1), (2, 3), (3, 4), (2, 5), (128, 32)):
        assert block_items(0, 1, heads, nmb) == namespace["schedule"](heads, 128 * nmb)
