! use mpi_f08: non-contiguous array sections as choice buffers, passed
! whole (count = the section's size, a predefined datatype of its
! elements): rows of a matrix (a stride), every other element, a
! reversed section (a negative stride), a 2-D block of a 3-D array, in
! Sendrecv, Isend/Irecv, Bcast and MPI_Put, on the send and the receive
! side; elements outside the receiving section stay untouched. A shared
! (count, datatype) of two sections (Allreduce) and a count that is not
! the section's size are refused with MPI_ERR_BUFFER. Checked on every
! rank.
program f_f08_sections
  use mpi_f08
  implicit none
  integer :: rank, nprocs, right, left, i, j, k, ierr
  real(kind=8) :: a(3, 4), b(3, 4)
  integer :: x(10), y(10), c(4, 5, 2), d(4, 5, 2), w(8)
  type(MPI_Request) :: rq(2)
  type(MPI_Win) :: win
  integer(kind=MPI_ADDRESS_KIND) :: wsize, disp

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  right = mod(rank + 1, nprocs)
  left = mod(rank - 1 + nprocs, nprocs)

  ! A row (stride 3 elements) into a row.
  a = reshape([(rank * 100 + i, i = 1, 12)], [3, 4])
  b = -1
  call MPI_Sendrecv(a(2, :), 4, MPI_DOUBLE_PRECISION, right, 1, b(3, :), 4, MPI_DOUBLE_PRECISION, left, 1, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  do j = 1, 4
    if (b(3, j) /= left * 100 + 2 + 3 * (j - 1)) call fail('row into row')
    if (any(b(1:2, j) /= -1)) call fail('row into row: elements beside it written')
  end do

  ! Every other element, and a reversed section, nonblocking.
  x = [(rank * 10 + i, i = 1, 10)]
  y = -1
  call MPI_Irecv(y(10:1:-1), 10, MPI_INTEGER, left, 2, MPI_COMM_WORLD, rq(1))
  call MPI_Isend(x, 10, MPI_INTEGER, right, 2, MPI_COMM_WORLD, rq(2))
  call MPI_Waitall(2, rq, MPI_STATUSES_IGNORE)
  do i = 1, 10
    if (y(i) /= left * 10 + 11 - i) call fail('into a reversed section')
  end do
  y = -1
  call MPI_Sendrecv(x(1:10:2), 5, MPI_INTEGER, right, 3, y(2:10:2), 5, MPI_INTEGER, left, 3, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  do i = 1, 5
    if (y(2 * i) /= left * 10 + 2 * i - 1 .or. y(2 * i - 1) /= -1) call fail('every other element')
  end do

  ! A 2-D block of a 3-D array, broadcast from rank 0.
  c = -1
  if (rank == 0) c = reshape([(i, i = 1, 40)], [4, 5, 2])
  call MPI_Bcast(c(2:3, 2:4, 2), 6, MPI_INTEGER, 0, MPI_COMM_WORLD)
  do k = 1, 2
    do j = 1, 5
      do i = 1, 4
        if (i >= 2 .and. i <= 3 .and. j >= 2 .and. j <= 4 .and. k == 2) then
          if (c(i, j, k) /= i + 4 * (j - 1) + 20 * (k - 1)) call fail('bcast of a block')
        else if (rank /= 0 .and. c(i, j, k) /= -1) then
          call fail('bcast of a block: elements beside it written')
        end if
      end do
    end do
  end do

  ! MPI_Put from a section into the right neighbour's window.
  w = -1
  wsize = 8 * 4
  call MPI_Win_create(w, wsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win)
  call MPI_Win_fence(0, win)
  d = reshape([(rank * 1000 + i, i = 1, 40)], [4, 5, 2])
  disp = 0
  call MPI_Put(d(1, 1:4, 1), 4, MPI_INTEGER, right, disp, 4, MPI_INTEGER, win)
  call MPI_Win_fence(0, win)
  do j = 1, 4
    if (w(j) /= left * 1000 + 1 + 4 * (j - 1)) call fail('put from a section')
  end do
  if (any(w(5:8) /= -1)) call fail('put from a section: beyond it written')
  call MPI_Win_free(win)

  ! Refused: a (count, datatype) shared by two sections, and a count
  ! that is not the section's size.
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
  call MPI_Allreduce(a(1, :), b(1, :), 4, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_ERR_BUFFER) call fail('allreduce of sections accepted')
  call MPI_Send(a(1, :), 2, MPI_DOUBLE_PRECISION, right, 4, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_ERR_BUFFER) call fail('a count other than the section size accepted')

  call MPI_Finalize()
  if (rank == 0) print *, 'f_f08_sections ok'
contains
  subroutine fail(what)
    character(len=*) :: what
    print *, 'FAIL: ', what
    call MPI_Abort(MPI_COMM_WORLD, 99)
  end subroutine fail
end program f_f08_sections
