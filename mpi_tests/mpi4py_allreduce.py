# mpi4py (its binary wheel for MPICH) on OxMPI: the library it loaded, an
# object allreduce, a buffer Allreduce and a Bcast, values checked.
import array
from mpi4py import MPI

c = MPI.COMM_WORLD
r, n = c.Get_rank(), c.Get_size()
assert MPI.Get_library_version().startswith("OxMPI"), MPI.Get_library_version()
assert c.allreduce(r + 1) == n * (n + 1) // 2
a = array.array("d", [r + 0.5] * 5)
b = array.array("d", [0.0] * 5)
c.Allreduce(a, b, op=MPI.SUM)
assert list(b) == [n * (n - 1) / 2 + 0.5 * n] * 5, list(b)
x = array.array("i", range(10) if r == n - 1 else [0] * 10)
c.Bcast(x, root=n - 1)
assert list(x) == list(range(10)), list(x)
c.Barrier()
if r == 0:
    print("mpi4py ok", flush=True)
