"""heap_py.py - an allocation-heavy CPython workload for the heap recorders'
cost (bench/run_heap.sh, run with PYTHONMALLOC=malloc so that every object
goes through malloc): rounds of building and dropping dicts of lists and
strings, with a small part kept alive across rounds, as a program with a
cache does. Deterministic (no hashing of random data, no time); about 2
million allocations with the default ROUNDS on CPython 3.11.

usage: python3 heap_py.py [ROUNDS]
"""
import sys


def build(round_no, n):
    table = {}
    for i in range(n):
        key = "key-%d-%d" % (round_no, i)
        table[key] = [i, str(i) * 3, {"n": i, "s": key.upper()}]
    return table


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    kept = []
    total = 0
    for r in range(rounds):
        table = build(r, 5000)
        total += sum(len(v[1]) for v in table.values())
        kept.append({k: v for k, v in list(table.items())[:100]})
        if len(kept) > 10:
            kept.pop(0)
    print(total, len(kept))


main()
