#!/usr/bin/env python3
"""Writes a C program that checks every integer constant of mpi.h, the
special pointers and the MPI_Status layout against MPICH 4.0.2's measured
values (tests/data/mpich-4.0.2-constants.tsv)."""
import sys, pathlib
root = pathlib.Path(__file__).resolve().parent.parent
rows = [l.split("\t") for l in (root / "tests/data/mpich-4.0.2-constants.tsv").read_text().splitlines() if not l.startswith("#")]
out = ["#include <mpi.h>", "#include <stdio.h>", "#include <stddef.h>", "#include <string.h>",
       "static int bad = 0, n = 0;",
       "#define CHECK(name, got, want) do { n++; if ((long long)(got) != (long long)(want)) { bad++; printf(\"FAIL: %s = %lld, MPICH has %lld\\n\", name, (long long)(got), (long long)(want)); } } while (0)",
       "int main(void) {"]
for name, ctype, dec, _ in rows:
    if ctype == "int":
        out.append(f'    CHECK("{name}", {name}, {dec}LL);')
    elif ctype == "pointer":
        out.append(f'    CHECK("{name}", (long long)(intptr_t){name}, {dec}LL);')
    elif ctype == "size":
        t = name[len("sizeof("):-1]
        out.append(f'    CHECK("{name}", sizeof({t}), {dec});')
    elif ctype == "string":
        out.append(f'    n++; if (strcmp({name}, {dec}) != 0) {{ bad++; printf("FAIL: {name}\\n"); }}')
for i, f in enumerate(["count_lo", "count_hi_and_cancelled", "MPI_SOURCE", "MPI_TAG", "MPI_ERROR"]):
    out.append(f'    CHECK("offsetof(MPI_Status, {f})", offsetof(MPI_Status, {f}), {4 * i});')
out.append('    printf("%d constants checked, %d differ\\n", n, bad);')
out.append("    return bad != 0;")
out.append("}")
pathlib.Path(sys.argv[1]).write_text("\n".join(out) + "\n")
