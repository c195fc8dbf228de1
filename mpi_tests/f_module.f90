! `use mpi`: one routine called with buffers of different types in one unit
! (no -fallow-argument-mismatch needed), derived types, a Fortran user op,
! nonblocking requests, collectives.
module userops
contains
  subroutine absmax(invec, inoutvec, n, dtype)
    integer :: n, dtype, i
    integer :: invec(n), inoutvec(n)
    do i = 1, n
      inoutvec(i) = max(abs(invec(i)), abs(inoutvec(i)))
    end do
  end subroutine
end module

program fmodule
  use mpi
  use userops
  implicit none
  integer :: ierr, rank, nprocs, left, right, i, req(2), op, vec, n
  integer :: ia(4), ib(4), statuses(MPI_STATUS_SIZE, 2)
  double precision :: da(3), db(3), m(5, 4), col(5)
  character(len=8) :: ca, cb
  logical :: flag
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank + nprocs - 1, nprocs)
  ia = [(rank * 10 + i, i = 1, 4)]
  da = [(rank + i * 0.25d0, i = 1, 3)]
  ca = 'rank' // achar(48 + mod(rank, 10))
  ! three buffer types through MPI_Isend / MPI_Recv in one program unit
  call MPI_Isend(ia, 4, MPI_INTEGER, right, 1, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Recv(ib, 4, MPI_INTEGER, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call MPI_Wait(req(1), MPI_STATUS_IGNORE, ierr)
  if (any(ib /= [(left * 10 + i, i = 1, 4)])) call fail('integer buffer')
  call MPI_Irecv(db, 3, MPI_DOUBLE_PRECISION, left, 2, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(da, 3, MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, req(2), ierr)
  call MPI_Waitall(2, req, statuses, ierr)
  if (statuses(MPI_SOURCE, 1) /= left) call fail('waitall status')
  if (any(db /= [(left + i * 0.25d0, i = 1, 3)])) call fail('double buffer')
  call MPI_Sendrecv(ca, 8, MPI_CHARACTER, right, 3, cb, 8, MPI_CHARACTER, left, 3, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  if (cb /= 'rank' // achar(48 + mod(left, 10))) call fail('character buffer')
  ! a column of a column-major 5x4 matrix is contiguous; a row is a vector
  m = reshape([(dble(rank * 100 + i), i = 1, 20)], [5, 4])
  call MPI_Type_vector(4, 1, 5, MPI_DOUBLE_PRECISION, vec, ierr)
  call MPI_Type_commit(vec, ierr)
  call MPI_Sendrecv(m(2, 1), 1, vec, right, 4, col, 4, MPI_DOUBLE_PRECISION, left, 4, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  do i = 1, 4
    if (col(i) /= left * 100 + 2 + (i - 1) * 5) call fail('vector row')
  end do
  call MPI_Type_free(vec, ierr)
  ! user op written in Fortran
  call MPI_Op_create(absmax, .true., op, ierr)
  ia = [-rank, rank, 0, -2 * rank]
  call MPI_Allreduce(ia, ib, 4, MPI_INTEGER, op, MPI_COMM_WORLD, ierr)
  if (any(ib /= [nprocs - 1, nprocs - 1, 0, 2 * (nprocs - 1)])) call fail('user op')
  call MPI_Op_free(op, ierr)
  ! in-place allreduce on doubles, gather
  da = rank
  call MPI_Allreduce(MPI_IN_PLACE, da, 3, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (any(da /= nprocs - 1)) call fail('in-place allreduce')
  call MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, flag, MPI_STATUS_IGNORE, ierr)
  if (flag) call fail('iprobe found a message')
  call MPI_Type_size(MPI_DOUBLE_PRECISION, n, ierr)
  if (n /= 8) call fail('type size')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
  if (rank == 0) print *, 'f_module ok'
contains
  subroutine fail(what)
    character(len=*) :: what
    integer :: e
    print *, 'FAIL: ', what
    call MPI_Abort(MPI_COMM_WORLD, 99, e)
  end subroutine
end program
