! 2-D Jacobi stencil on a Cartesian grid: halo exchange with Cart_shift and
! Sendrecv, max-residual Allreduce. Rank 0 also runs the same iteration on
! the whole grid alone; the gathered field and the residual must be identical.
program stencil
  use mpi
  implicit none
  integer, parameter :: n = 24, iters = 30
  integer :: ierr, rank, nprocs, cart, dims(2), coords(2), up, down, lft, rgt
  integer :: nx, ny, i, j, it, x0, y0, p, pc(2), rowtype, status(MPI_STATUS_SIZE)
  logical :: periods(2)
  double precision, allocatable :: u(:, :), v(:, :), g(:, :), gv(:, :), blk(:, :)
  double precision :: res, gres, sres
  call MPI_Init(ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  dims = 0
  call MPI_Dims_create(nprocs, 2, dims, ierr)
  periods = .false.
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., cart, ierr)
  call MPI_Comm_rank(cart, rank, ierr)
  call MPI_Cart_coords(cart, rank, 2, coords, ierr)
  call MPI_Cart_shift(cart, 0, 1, up, down, ierr)
  call MPI_Cart_shift(cart, 1, 1, lft, rgt, ierr)
  nx = n / dims(1); ny = n / dims(2)
  x0 = coords(1) * nx; y0 = coords(2) * ny
  allocate(u(0:nx + 1, 0:ny + 1), v(0:nx + 1, 0:ny + 1))
  u = 0
  do j = 1, ny
    do i = 1, nx
      u(i, j) = init(x0 + i, y0 + j)
    end do
  end do
  ! a row of the local block (stride nx+2 in memory) as a vector type
  call MPI_Type_vector(ny, 1, nx + 2, MPI_DOUBLE_PRECISION, rowtype, ierr)
  call MPI_Type_commit(rowtype, ierr)
  do it = 1, iters
    ! columns are contiguous (first index fastest); rows use rowtype
    call MPI_Sendrecv(u(1, 1), 1, rowtype, up, 1, u(nx + 1, 1), 1, rowtype, down, 1, cart, status, ierr)
    call MPI_Sendrecv(u(nx, 1), 1, rowtype, down, 2, u(0, 1), 1, rowtype, up, 2, cart, status, ierr)
    call MPI_Sendrecv(u(1, 1), nx, MPI_DOUBLE_PRECISION, lft, 3, u(1, ny + 1), nx, MPI_DOUBLE_PRECISION, rgt, 3, &
                      cart, status, ierr)
    call MPI_Sendrecv(u(1, ny), nx, MPI_DOUBLE_PRECISION, rgt, 4, u(1, 0), nx, MPI_DOUBLE_PRECISION, lft, 4, &
                      cart, status, ierr)
    res = 0
    v = u
    do j = 1, ny
      do i = 1, nx
        if (x0 + i == 1 .or. x0 + i == n .or. y0 + j == 1 .or. y0 + j == n) cycle
        v(i, j) = 0.25d0 * (u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1))
        res = max(res, abs(v(i, j) - u(i, j)))
      end do
    end do
    u = v
    call MPI_Allreduce(res, gres, 1, MPI_DOUBLE_PRECISION, MPI_MAX, cart, ierr)
  end do
  ! gather the blocks at rank 0 and compare with a one-process run
  allocate(blk(nx, ny))
  blk = u(1:nx, 1:ny)
  if (rank == 0) then
    allocate(g(n, n), gv(n, n))
    g(x0 + 1:x0 + nx, y0 + 1:y0 + ny) = blk
    do p = 1, nprocs - 1
      call MPI_Recv(blk, nx * ny, MPI_DOUBLE_PRECISION, p, 9, cart, status, ierr)
      call MPI_Cart_coords(cart, p, 2, pc, ierr)
      g(pc(1) * nx + 1:pc(1) * nx + nx, pc(2) * ny + 1:pc(2) * ny + ny) = blk
    end do
    ! serial reference
    do j = 1, n
      do i = 1, n
        gv(i, j) = init(i, j)
      end do
    end do
    do it = 1, iters
      sres = 0
      blk_s: block
        double precision :: w(n, n)
        w = gv
        do j = 2, n - 1
          do i = 2, n - 1
            w(i, j) = 0.25d0 * (gv(i - 1, j) + gv(i + 1, j) + gv(i, j - 1) + gv(i, j + 1))
            sres = max(sres, abs(w(i, j) - gv(i, j)))
          end do
        end do
        gv = w
      end block blk_s
    end do
    if (any(g /= gv)) then
      print *, 'FAIL: field differs from the one-process run'
      call MPI_Abort(MPI_COMM_WORLD, 99, ierr)
    end if
    if (sres /= gres) then
      print *, 'FAIL: residual', gres, 'one-process', sres
      call MPI_Abort(MPI_COMM_WORLD, 99, ierr)
    end if
    print '(a, i0, a, es12.5)', 'stencil on ', nprocs, ' ranks matches the one-rank run, residual ', gres
  else
    call MPI_Send(blk, nx * ny, MPI_DOUBLE_PRECISION, 0, 9, cart, ierr)
  end if
  call MPI_Type_free(rowtype, ierr)
  call MPI_Comm_free(cart, ierr)
  call MPI_Finalize(ierr)
contains
  double precision function init(i, j)
    integer :: i, j
    init = mod(i * 7 + j * 13, 17) * 1.0d0
    if (i == 1 .or. j == 1) init = 100
  end function
end program
