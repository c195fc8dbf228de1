! use mpi with the MPI-4 additions: MPI_SIZEOF, MPI_TYPE_CREATE_F90_*,
! MPI_ISENDRECV(_REPLACE), MPI_COMM_SPLIT of an intercommunicator,
! generalized requests with Fortran callbacks, partitioned communication,
! sessions beside MPI_INIT, and a not-implemented routine that links and
! reports at run time.
module greq_cb
  use mpi
  implicit none
  integer :: nfree = 0, ncancel = 0
contains
  subroutine query_fn(extra, status, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    integer :: status(MPI_STATUS_SIZE), ierror
    status(MPI_SOURCE) = int(extra)
    status(MPI_TAG) = 77
    call MPI_STATUS_SET_ELEMENTS(status, MPI_INTEGER, 3, ierror)
    ierror = MPI_SUCCESS
  end subroutine query_fn
  subroutine free_fn(extra, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    integer :: ierror
    nfree = nfree + 1
    ierror = MPI_SUCCESS
  end subroutine free_fn
  subroutine cancel_fn(extra, complete, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra
    logical :: complete
    integer :: ierror
    ncancel = ncancel + 1
    ierror = MPI_SUCCESS
  end subroutine cancel_fn
end module greq_cb

program f_mpi4
  use mpi
  use greq_cb
  implicit none
  integer :: ierr, rank, nprocs, sz, t, right, left, rv, cnt, req, i
  integer :: status(MPI_STATUS_SIZE), local, inter, sub, rsize, color
  integer(kind=8) :: i8
  real(kind=8) :: r8(10)
  complex(kind=4) :: c4
  integer(kind=MPI_ADDRESS_KIND) :: extra
  integer(kind=MPI_COUNT_KIND) :: pcount
  integer :: pbuf(40), preq
  logical :: flag
  integer :: session
  character(len=MPI_MAX_PORT_NAME) :: port

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank + nprocs - 1, nprocs)

  call MPI_SIZEOF(i8, sz, ierr)
  if (sz /= 8) call fail('sizeof integer(8)')
  call MPI_SIZEOF(r8, sz, ierr)
  if (sz /= 8) call fail('sizeof real(8) array')
  call MPI_SIZEOF(c4, sz, ierr)
  if (sz /= 8) call fail('sizeof complex(4)')

  call MPI_TYPE_CREATE_F90_INTEGER(9, t, ierr)
  if (t /= MPI_INTEGER4) call fail('f90 integer(9)')
  call MPI_TYPE_CREATE_F90_REAL(15, 300, t, ierr)
  if (t /= MPI_REAL8) call fail('f90 real(15,300)')
  call MPI_TYPE_CREATE_F90_COMPLEX(6, MPI_UNDEFINED, t, ierr)
  if (t /= MPI_COMPLEX8) call fail('f90 complex(6)')

  call MPI_ISENDRECV(rank, 1, MPI_INTEGER, right, 3, rv, 1, MPI_INTEGER, left, 3, &
                     MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, status, ierr)
  if (rv /= left .or. status(MPI_SOURCE) /= left) call fail('isendrecv')
  rv = rank * 2
  call MPI_ISENDRECV_REPLACE(rv, 1, MPI_INTEGER, right, 4, left, 4, MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  if (rv /= left * 2) call fail('isendrecv_replace')

  if (nprocs >= 2) then
    color = mod(rank, 2)
    call MPI_COMM_SPLIT(MPI_COMM_WORLD, color, rank, local, ierr)
    call MPI_INTERCOMM_CREATE(local, 0, MPI_COMM_WORLD, 1 - color, 9, inter, ierr)
    call MPI_COMM_SPLIT(inter, 0, -rank, sub, ierr)
    if (sub == MPI_COMM_NULL) call fail('intercomm split gave MPI_COMM_NULL')
    call MPI_COMM_REMOTE_SIZE(sub, rsize, ierr)
    if (rsize /= (nprocs + color) / 2) call fail('intercomm split remote size')
    call MPI_COMM_FREE(sub, ierr)
    call MPI_COMM_FREE(inter, ierr)
    call MPI_COMM_FREE(local, ierr)
  end if

  extra = 5
  call MPI_GREQUEST_START(query_fn, free_fn, cancel_fn, extra, req, ierr)
  call MPI_TEST(req, flag, status, ierr)
  if (flag) call fail('grequest complete before MPI_GREQUEST_COMPLETE')
  call MPI_CANCEL(req, ierr)
  if (ncancel /= 1) call fail('cancel_fn')
  call MPI_GREQUEST_COMPLETE(req, ierr)
  call MPI_WAIT(req, status, ierr)
  call MPI_GET_COUNT(status, MPI_INTEGER, cnt, ierr)
  if (status(MPI_SOURCE) /= 5 .or. status(MPI_TAG) /= 77 .or. cnt /= 3) call fail('grequest status')
  if (nfree /= 1) call fail('free_fn')

  ! Partitioned: 4 partitions of 10 to the right, 2 of 20 from the left.
  do i = 1, 40
    pbuf(i) = rank * 100 + i
  end do
  pcount = 10
  if (mod(rank, 2) == 0 .and. rank + 1 < nprocs) then
    call MPI_PSEND_INIT(pbuf, 4, pcount, MPI_INTEGER, rank + 1, 6, MPI_COMM_WORLD, MPI_INFO_NULL, preq, ierr)
    call MPI_START(preq, ierr)
    do i = 3, 0, -1
      call MPI_PREADY(i, preq, ierr)
    end do
    call MPI_WAIT(preq, MPI_STATUS_IGNORE, ierr)
    call MPI_REQUEST_FREE(preq, ierr)
  else if (mod(rank, 2) == 1) then
    pcount = 20
    call MPI_PRECV_INIT(pbuf, 2, pcount, MPI_INTEGER, rank - 1, 6, MPI_COMM_WORLD, MPI_INFO_NULL, preq, ierr)
    call MPI_START(preq, ierr)
    call MPI_WAIT(preq, MPI_STATUS_IGNORE, ierr)
    call MPI_PARRIVED(preq, 1, flag, ierr)
    if (.not. flag) call fail('parrived')
    do i = 1, 40
      if (pbuf(i) /= (rank - 1) * 100 + i) call fail('partitioned data')
    end do
    call MPI_REQUEST_FREE(preq, ierr)
  end if

  call MPI_SESSION_INIT(MPI_INFO_NULL, MPI_ERRORS_RETURN, session, ierr)
  if (ierr /= MPI_SUCCESS) call fail('session_init')
  call MPI_SESSION_GET_NUM_PSETS(session, MPI_INFO_NULL, cnt, ierr)
  if (cnt /= 2) call fail('session psets')
  call MPI_SESSION_FINALIZE(session, ierr)

  ! A routine OxMPI does not implement links, and says so at run time.
  call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  call MPI_OPEN_PORT(MPI_INFO_NULL, port, ierr)
  if (ierr == MPI_SUCCESS) call fail('a stub succeeded')

  call MPI_FINALIZE(ierr)
  if (rank == 0) print *, 'f_mpi4 ok'
contains
  subroutine fail(what)
    character(len=*) :: what
    integer :: e
    print *, 'FAIL: ', what
    call MPI_ABORT(MPI_COMM_WORLD, 99, e)
  end subroutine fail
end program f_mpi4
