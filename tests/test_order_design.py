"""The `pairs` order's design (run/design.py): balanced positions, balanced pair orders and
adjacencies, every label's window of a cell consecutive, reproducible from the seed."""

from __future__ import annotations

import random
from collections import Counter
from itertools import combinations, permutations

import pytest

from perfpages.run.design import again, label_orders, plan, williams


def names(k: int) -> list[str]:
    return [f"l{i}" for i in range(k)]


@pytest.mark.parametrize("k", range(1, 8))
def test_the_williams_rows_are_balanced(k: int) -> None:
    rows = williams(k)
    assert len(rows) == (2 * k if k % 2 and k > 1 else k) and len(set(rows)) == len(rows)
    assert all(sorted(r) == list(range(k)) for r in rows)
    positions = Counter((r[p], p) for r in rows for p in range(k))
    assert set(positions.values()) == {len(rows) // k}  # each symbol in each position alike
    adjacent = Counter((r[i], r[i + 1]) for r in rows for i in range(k - 1))
    assert set(adjacent) == set(permutations(range(k), 2))
    assert len(set(adjacent.values())) <= 1  # each ordered adjacency equally often
    before = Counter((r[i], r[j]) for r in rows for i, j in combinations(range(k), 2))
    assert all(before[a, b] == before[b, a] for a, b in combinations(range(k), 2))
    # each row's reverse follows it: cut after an even number, pair orders stay balanced
    assert all(rows[i + 1] == rows[i][::-1] for i in range(0, len(rows) - 1, 2))


def _counts(orders: list[tuple[str, ...]]) -> tuple[Counter, Counter, Counter]:
    positions = Counter((o[p], p) for o in orders for p in range(len(o)))
    first = Counter((o[i], o[j]) for o in orders for i, j in combinations(range(len(o)), 2))
    adjacent = Counter((o[i], o[i + 1]) for o in orders for i in range(len(o) - 1))
    return positions, first, adjacent


@pytest.mark.parametrize("k", range(2, 7))
@pytest.mark.parametrize("rounds", [2, 3, 5, 10, 12, 20, 24, 31])
def test_label_orders_are_balanced_over_the_rounds(k: int, rounds: int) -> None:
    labels = names(k)
    for seed in range(5):
        orders = label_orders(labels, rounds, random.Random(seed))
        assert len(orders) == rounds and all(sorted(o) == labels for o in orders)
        positions, first, adjacent = _counts(orders)
        size = len(williams(k))
        if rounds % size == 0:  # whole copies of the design: exactly balanced
            assert set(positions.values()) == {rounds // k}
            assert all(first[a, b] == rounds // 2 for a, b in permutations(labels, 2))
            assert set(adjacent.values()) == {rounds // k}
        else:  # a part of a copy: each pair's order within one, positions within two
            per_label = [[positions[x, p] for x in labels] for p in range(k)]
            assert all(max(c) - min(c) <= 2 for c in per_label)
            assert all(abs(first[a, b] - first[b, a]) <= 1 for a, b in combinations(labels, 2))
        if k == 2:  # AB in half the rounds, BA in the other half
            assert abs(Counter(orders)[tuple(labels)] * 2 - rounds) <= 1


def test_which_rounds_take_which_order_is_drawn_afresh() -> None:
    drawn = {tuple(label_orders(["a", "b"], 20, random.Random(s))) for s in range(30)}
    assert len(drawn) > 20


@pytest.mark.parametrize("k", range(2, 7))
@pytest.mark.parametrize(("cells", "rounds"), [(1, 3), (4, 20), (6, 10), (2, 7)])
def test_a_plan_visits_every_cell_once_a_round_with_every_label(k: int, cells: int,
                                                                rounds: int) -> None:
    labels = names(k)
    p = plan(labels, cells, rounds, "7-0")
    assert len(p) == rounds
    for visits in p:
        assert sorted(c for c, _ in visits) == list(range(cells))
        assert all(sorted(order) == labels for _, order in visits)
    # each cell has its own balanced design over the rounds
    for cell in range(cells):
        orders = [dict(visits)[cell] for visits in p]
        positions, first, _ = _counts(orders)
        assert all(abs(first[a, b] - first[b, a]) <= 1 for a, b in combinations(labels, 2))
        assert all(max(positions[x, q] for x in labels) - min(positions[x, q] for x in labels)
                   <= 2 for q in range(k))
    # the windows a comparison pairs are consecutive: flattened, a cell's labels sit together
    for visits in p:
        flat = [(c, name) for c, order in visits for name in order]
        for cell in range(cells):
            at = [i for i, (c, _) in enumerate(flat) if c == cell]
            assert at == list(range(at[0], at[0] + k))
    assert plan(labels, cells, rounds, "7-0") == p  # the seed's, reproducibly
    if rounds > 1 and cells > 1:
        assert plan(labels, cells, rounds, "8-0") != p


def test_the_cells_order_is_random_but_leading_cells_lead() -> None:
    p = plan(["a", "b"], 6, 20, "1-0", leading=[0])
    assert all(visits[0][0] == 0 for visits in p)
    assert len({tuple(c for c, _ in visits) for visits in p}) > 10
    kept = plan(["a", "b"], 3, 1, "1-0", keep_cells=True)
    assert [c for c, _ in kept[0]] == [0, 1, 2]


def test_re_measures_take_a_fresh_balanced_order() -> None:
    cells = [(r, "callers=1") for r in range(1, 9)]
    done = again(["a", "b", "c", "d"], cells, "3-0")
    assert [(r, c) for r, c, _ in done] == cells
    positions, first, _ = _counts([o for _, _, o in done])
    assert all(first[a, b] == first[b, a] for a, b in combinations("abcd", 2))
    assert set(positions.values()) == {2}
    assert again(["a", "b", "c", "d"], cells, "3-0") == done
