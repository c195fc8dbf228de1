! Fortran conventions that differ from C's: request indices from
! MPI_Waitany / Waitsome / Testany / Testsome are 1-based (MPI_UNDEFINED
! stays); MPI_Info_get / MPI_Info_get_string give blank-padded values,
! lengths without a terminator, and leave the value alone when the key is
! missing or the length is 0; MPI_BOTTOM with a datatype built from
! absolute addresses.
program fconv
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, i, idx, outcount, info, buflen, done, to, from
  integer :: reqs(4), indices(4), bl(2), types(2), abst, absr
  integer :: stats(MPI_STATUS_SIZE, 4), st(MPI_STATUS_SIZE)
  integer :: a(4), b(4)
  ! Changed through MPI_BOTTOM, out of the compiler's sight.
  integer, volatile :: x(3), y(3)
  double precision, volatile :: z(2), w(2)
  integer(kind=MPI_ADDRESS_KIND) :: addrs(2)
  logical :: flag, seen(4)
  character(len=16) :: val

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  to = mod(rank + 1, nprocs)
  from = mod(rank + nprocs - 1, nprocs)

  ! ---- indices: request 3 (1-based) is the only active one
  reqs = MPI_REQUEST_NULL
  call MPI_Irecv(b(3), 1, MPI_INTEGER, from, 7, MPI_COMM_WORLD, reqs(3), ierr)
  a(1) = 100 + rank
  call MPI_Send(a(1), 1, MPI_INTEGER, to, 7, MPI_COMM_WORLD, ierr)
  call MPI_Waitany(4, reqs, idx, st, ierr)
  if (idx /= 3) call fail('MPI_Waitany index is not 1-based')
  if (b(3) /= 100 + from) call fail('MPI_Waitany data')
  call MPI_Waitany(4, reqs, idx, st, ierr)
  if (idx /= MPI_UNDEFINED) call fail('MPI_Waitany on no active request: MPI_UNDEFINED')

  reqs = MPI_REQUEST_NULL
  call MPI_Irecv(b(2), 1, MPI_INTEGER, from, 8, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Send(a(1), 1, MPI_INTEGER, to, 8, MPI_COMM_WORLD, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Testany(4, reqs, idx, flag, st, ierr)
  end do
  if (idx /= 2) call fail('MPI_Testany index is not 1-based')

  ! MPI_Waitsome over four receives: a loop that must end, each index once
  do i = 1, 4
    call MPI_Irecv(b(i), 1, MPI_INTEGER, from, 20 + i, MPI_COMM_WORLD, reqs(i), ierr)
  end do
  do i = 4, 1, -1
    a(i) = 1000 * rank + i
    call MPI_Send(a(i), 1, MPI_INTEGER, to, 20 + i, MPI_COMM_WORLD, ierr)
  end do
  seen = .false.
  done = 0
  do while (done < 4)
    call MPI_Waitsome(4, reqs, outcount, indices, stats, ierr)
    if (outcount == MPI_UNDEFINED) call fail('MPI_Waitsome: MPI_UNDEFINED with requests left')
    do i = 1, outcount
      if (indices(i) < 1 .or. indices(i) > 4) call fail('MPI_Waitsome index out of 1..4')
      if (seen(indices(i))) call fail('MPI_Waitsome index twice')
      seen(indices(i)) = .true.
      if (stats(MPI_TAG, i) /= 20 + indices(i)) call fail('MPI_Waitsome status of another request')
      done = done + 1
    end do
  end do
  do i = 1, 4
    if (b(i) /= 1000 * from + i) call fail('MPI_Waitsome data')
  end do
  call MPI_Waitsome(4, reqs, outcount, indices, stats, ierr)
  if (outcount /= MPI_UNDEFINED) call fail('MPI_Waitsome with no active request')

  do i = 1, 4
    call MPI_Irecv(b(i), 1, MPI_INTEGER, from, 30 + i, MPI_COMM_WORLD, reqs(i), ierr)
    call MPI_Send(a(i), 1, MPI_INTEGER, to, 30 + i, MPI_COMM_WORLD, ierr)
  end do
  seen = .false.
  done = 0
  do while (done < 4)
    call MPI_Testsome(4, reqs, outcount, indices, stats, ierr)
    do i = 1, outcount
      if (indices(i) < 1 .or. indices(i) > 4) call fail('MPI_Testsome index out of 1..4')
      if (seen(indices(i))) call fail('MPI_Testsome index twice')
      seen(indices(i)) = .true.
      done = done + 1
    end do
  end do

  ! ---- info strings
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, 'color', 'blue', ierr)
  val = 'untouched'
  call MPI_Info_get(info, 'colour', 16, val, flag, ierr)
  if (flag) call fail('MPI_Info_get: a missing key found')
  if (val /= 'untouched') call fail('MPI_Info_get wrote the value of a missing key')
  call MPI_Info_get(info, 'color', 16, val, flag, ierr)
  if (.not. flag .or. val /= 'blue') call fail('MPI_Info_get value')
  if (val(5:16) /= ' ') call fail('MPI_Info_get value not blank-padded')
  buflen = 16
  val = 'untouched'
  call MPI_Info_get_string(info, 'color', buflen, val, flag, ierr)
  if (.not. flag .or. val /= 'blue') call fail('MPI_Info_get_string value')
  if (buflen /= 4) call fail('MPI_Info_get_string length counts a terminator')
  buflen = 0
  val = 'untouched'
  call MPI_Info_get_string(info, 'color', buflen, val, flag, ierr)
  if (.not. flag .or. buflen /= 4) call fail('MPI_Info_get_string with buflen 0: the length')
  if (val /= 'untouched') call fail('MPI_Info_get_string with buflen 0 wrote the value')
  buflen = 16
  call MPI_Info_get_string(info, 'nokey', buflen, val, flag, ierr)
  if (flag .or. val /= 'untouched' .or. buflen /= 16) call fail('MPI_Info_get_string of a missing key')
  call MPI_Info_free(info, ierr)

  ! ---- MPI_BOTTOM with absolute addresses
  call MPI_Get_address(x, addrs(1), ierr)
  call MPI_Get_address(z, addrs(2), ierr)
  bl = (/ 3, 2 /)
  types = (/ MPI_INTEGER, MPI_DOUBLE_PRECISION /)
  call MPI_Type_create_struct(2, bl, addrs, types, abst, ierr)
  call MPI_Type_commit(abst, ierr)
  x = (/ rank, rank + 1, rank + 2 /)
  z = (/ rank * 0.5d0, rank * 0.25d0 /)
  ! received into MPI_BOTTOM too, with a type of y's and w's addresses
  call MPI_Get_address(y, addrs(1), ierr)
  call MPI_Get_address(w, addrs(2), ierr)
  call MPI_Type_create_struct(2, bl, addrs, types, absr, ierr)
  call MPI_Type_commit(absr, ierr)
  call MPI_Sendrecv(MPI_BOTTOM, 1, abst, to, 9, MPI_BOTTOM, 1, absr, from, 9, MPI_COMM_WORLD, st, ierr)
  if (ierr /= MPI_SUCCESS) call fail('MPI_Sendrecv from MPI_BOTTOM')
  if (y(1) /= from .or. y(3) /= from + 2) call fail('MPI_BOTTOM send data')
  if (w(1) /= from * 0.5d0 .or. w(2) /= from * 0.25d0) call fail('MPI_BOTTOM send data (doubles)')
  call MPI_Type_free(absr, ierr)
  call MPI_Bcast(MPI_BOTTOM, 1, abst, 0, MPI_COMM_WORLD, ierr)
  if (x(2) /= 1 .or. z(2) /= 0d0) call fail('MPI_BOTTOM bcast')
  call MPI_Type_free(abst, ierr)

  call MPI_Finalize(ierr)
  if (rank == 0) print *, 'f_conventions ok'
contains
  subroutine fail(what)
    character(len=*) :: what
    integer :: e
    print *, 'FAIL: ', what
    call MPI_Abort(MPI_COMM_WORLD, 99, e)
  end subroutine
end program
