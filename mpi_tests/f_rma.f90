! One-sided communication from Fortran (`use mpi`): MPI_Win_create and
! MPI_Win_allocate, fence put/get/accumulate, a passive-target
! fetch_and_op, the window attributes as Fortran sees them, a keyval.
program frma
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, right, left, win, win2, i, kv, flavor
  integer :: buf(4), src(4), got(4)
  integer(kind=MPI_ADDRESS_KIND) :: sz, disp, base, val, baseptr
  integer(kind=MPI_ADDRESS_KIND) :: one, old
  logical :: flag
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank + nprocs - 1, nprocs)
  buf = -1
  sz = 16
  call MPI_Win_create(buf, sz, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  if (ierr /= MPI_SUCCESS) stop 1
  call MPI_Win_fence(0, win, ierr)
  src = [(rank * 100 + i, i = 1, 4)]
  disp = 0
  call MPI_Put(src, 4, MPI_INTEGER, right, disp, 4, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  do i = 1, 4
    if (buf(i) /= left * 100 + i) then
      print *, 'FAIL put: buf(', i, ') =', buf(i)
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
  end do
  call MPI_Get(got, 4, MPI_INTEGER, right, disp, 4, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  if (any(got /= [(rank * 100 + i, i = 1, 4)])) then
    print *, 'FAIL get:', got
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call MPI_Accumulate(src, 1, MPI_INTEGER, 0, disp, 1, MPI_INTEGER, MPI_SUM, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call MPI_Win_get_attr(win, MPI_WIN_SIZE, val, flag, ierr)
  if (.not. flag .or. val /= 16) then
    print *, 'FAIL MPI_WIN_SIZE', val
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, val, flag, ierr)
  if (.not. flag .or. val /= 4) then
    print *, 'FAIL MPI_WIN_DISP_UNIT', val
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, val, flag, ierr)
  if (.not. flag .or. val /= MPI_WIN_FLAVOR_CREATE) then
    print *, 'FAIL MPI_WIN_CREATE_FLAVOR', val
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, kv, 0_MPI_ADDRESS_KIND, ierr)
  val = 77
  call MPI_Win_set_attr(win, kv, val, ierr)
  val = 0
  call MPI_Win_get_attr(win, kv, val, flag, ierr)
  if (.not. flag .or. val /= 77) then
    print *, 'FAIL keyval', val
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call MPI_Win_fence(MPI_MODE_NOSUCCEED, win, ierr)
  call MPI_Win_free(win, ierr)
  call MPI_Win_free_keyval(kv, ierr)
  if (rank == 0 .and. buf(1) /= (nprocs - 1) * 100 + 1 + 100 * nprocs * (nprocs - 1) / 2 + nprocs) then
    print *, 'FAIL accumulate', buf(1)
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  ! an allocated window of 8-byte counters and a passive-target fetch_and_op
  sz = 8
  call MPI_Win_allocate(sz, 8, MPI_INFO_NULL, MPI_COMM_WORLD, baseptr, win2, ierr)
  call MPI_Win_get_attr(win2, MPI_WIN_BASE, base, flag, ierr)
  if (.not. flag .or. base /= baseptr) then
    print *, 'FAIL MPI_WIN_BASE', base, baseptr
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call MPI_Win_get_attr(win2, MPI_WIN_CREATE_FLAVOR, val, flag, ierr)
  if (val /= MPI_WIN_FLAVOR_ALLOCATE) stop 2
  one = 0
  call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win2, ierr)
  call MPI_Put(one, 1, MPI_INTEGER8, rank, 0_MPI_ADDRESS_KIND, 1, MPI_INTEGER8, win2, ierr)
  call MPI_Win_unlock(rank, win2, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  one = 1
  call MPI_Win_lock_all(0, win2, ierr)
  do i = 1, 10
    call MPI_Fetch_and_op(one, old, MPI_INTEGER8, 0, 0_MPI_ADDRESS_KIND, MPI_SUM, win2, ierr)
  end do
  call MPI_Win_flush_all(win2, ierr)
  call MPI_Win_unlock_all(win2, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win2, ierr)
  call MPI_Get(old, 1, MPI_INTEGER8, 0, 0_MPI_ADDRESS_KIND, 1, MPI_INTEGER8, win2, ierr)
  call MPI_Win_unlock(0, win2, ierr)
  if (old /= 10 * nprocs) then
    print *, 'FAIL fetch_and_op total', old
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call MPI_Win_free(win2, ierr)
  call MPI_Finalize(ierr)
  if (rank == 0) print *, 'f_rma ok'
end program
