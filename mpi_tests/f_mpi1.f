! MPI-1's Fortran routines with default INTEGER values: attributes
! (MPI_KEYVAL_CREATE, MPI_ATTR_PUT/GET/DELETE with MPI_DUP_FN and a
! callback of the program's), MPI_ADDRESS, MPI_TYPE_STRUCT / HVECTOR /
! HINDEXED with INTEGER displacements, MPI_TYPE_EXTENT / LB / UB, and the
! MPI-1 error handler names.
      PROGRAM FMPI1
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER IERR, RANK, NPROCS, KV, KD, VAL, DUP, DUP2, EXTRA
      INTEGER A(10), B(10), I, ADDR1, ADDR2, EXT, LB, UB, ST, HV
      INTEGER BLS(3), DISPS(3), TYPES(3), POS, EH, EH2
      CHARACTER PBUF(100)
      INTEGER IPB(25)
      EQUIVALENCE (PBUF, IPB)
      LOGICAL FLAG
      EXTERNAL ADDTEN
      COMMON /CNT/ NCOPY
      INTEGER NCOPY
      NCOPY = 0
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NPROCS, IERR)
! Attributes: MPI_DUP_FN copies the value, ADDTEN adds EXTRA to it.
      CALL MPI_KEYVAL_CREATE(MPI_DUP_FN, MPI_NULL_DELETE_FN, KD, 0,
     &     IERR)
      IF (IERR .NE. MPI_SUCCESS) CALL FAIL('keyval_create dup_fn')
      EXTRA = 10
      CALL MPI_KEYVAL_CREATE(ADDTEN, MPI_NULL_DELETE_FN, KV, EXTRA,
     &     IERR)
      CALL MPI_COMM_DUP(MPI_COMM_WORLD, DUP, IERR)
      CALL MPI_ATTR_PUT(DUP, KD, -7, IERR)
      CALL MPI_ATTR_PUT(DUP, KV, 32, IERR)
      CALL MPI_ATTR_GET(DUP, KD, VAL, FLAG, IERR)
      IF (.NOT. FLAG .OR. VAL .NE. -7) CALL FAIL('attr_get')
      CALL MPI_COMM_DUP(DUP, DUP2, IERR)
      IF (NCOPY .NE. 1) CALL FAIL('copy callback count')
      CALL MPI_ATTR_GET(DUP2, KD, VAL, FLAG, IERR)
      IF (.NOT. FLAG .OR. VAL .NE. -7) CALL FAIL('MPI_DUP_FN value')
      CALL MPI_ATTR_GET(DUP2, KV, VAL, FLAG, IERR)
      IF (.NOT. FLAG .OR. VAL .NE. 42) CALL FAIL('callback value')
      CALL MPI_ATTR_DELETE(DUP2, KV, IERR)
      CALL MPI_ATTR_GET(DUP2, KV, VAL, FLAG, IERR)
      IF (FLAG) CALL FAIL('attr_delete')
      CALL MPI_ATTR_GET(MPI_COMM_WORLD, MPI_TAG_UB, VAL, FLAG, IERR)
      IF (.NOT. FLAG .OR. VAL .LT. 32767) CALL FAIL('MPI_TAG_UB')
      CALL MPI_COMM_FREE(DUP2, IERR)
      CALL MPI_COMM_FREE(DUP, IERR)
      CALL MPI_KEYVAL_FREE(KV, IERR)
      CALL MPI_KEYVAL_FREE(KD, IERR)
      IF (KD .NE. MPI_KEYVAL_INVALID) CALL FAIL('keyval_free')
! MPI_ADDRESS: on a 64-bit machine an address rarely fits a default
! INTEGER; where it does not, the error is returned (MPI_ERR_ARG), as
! the peers do; where it does, differences are byte offsets.
      CALL MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN,
     &     IERR)
      CALL MPI_ADDRESS(A(1), ADDR1, IERR)
      IF (IERR .EQ. MPI_SUCCESS) THEN
         CALL MPI_ADDRESS(A(2), ADDR2, IERR)
         IF (ADDR2 - ADDR1 .NE. 4) CALL FAIL('address difference')
      ELSE IF (IERR .NE. MPI_ERR_ARG) THEN
         CALL FAIL('address error class')
      END IF
      CALL MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD,
     &     MPI_ERRORS_ARE_FATAL, IERR)
! MPI_TYPE_STRUCT with INTEGER displacements: A(2) and A(5) as one
! element.
      DO I = 1, 10
         A(I) = I
         B(I) = 100 + I
      END DO
      BLS(1) = 1
      BLS(2) = 1
      DISPS(1) = 4
      DISPS(2) = 16
      TYPES(1) = MPI_INTEGER
      TYPES(2) = MPI_INTEGER
      CALL MPI_TYPE_STRUCT(2, BLS, DISPS, TYPES, ST, IERR)
      IF (IERR .NE. MPI_SUCCESS) CALL FAIL('type_struct')
      CALL MPI_TYPE_COMMIT(ST, IERR)
      POS = 0
      CALL MPI_PACK(A, 1, ST, PBUF, 100, POS, MPI_COMM_WORLD, IERR)
      IF (POS .NE. 8 .OR. IPB(1) .NE. 2 .OR. IPB(2) .NE. 5)
     &     CALL FAIL('struct displacements')
      CALL MPI_TYPE_FREE(ST, IERR)
! Markers: MPI_LB at -4, an INTEGER at 0, MPI_UB at 16.
      BLS(3) = 1
      DISPS(1) = -4
      DISPS(2) = 0
      DISPS(3) = 16
      TYPES(1) = MPI_LB
      TYPES(2) = MPI_INTEGER
      TYPES(3) = MPI_UB
      CALL MPI_TYPE_STRUCT(3, BLS, DISPS, TYPES, ST, IERR)
      CALL MPI_TYPE_EXTENT(ST, EXT, IERR)
      CALL MPI_TYPE_LB(ST, LB, IERR)
      CALL MPI_TYPE_UB(ST, UB, IERR)
      IF (EXT .NE. 20 .OR. LB .NE. -4 .OR. UB .NE. 16)
     &     CALL FAIL('marker bounds')
      CALL MPI_TYPE_FREE(ST, IERR)
! MPI_TYPE_HVECTOR with an INTEGER stride in bytes: A(1), A(4), A(7).
      CALL MPI_TYPE_HVECTOR(3, 1, 12, MPI_INTEGER, HV, IERR)
      CALL MPI_TYPE_COMMIT(HV, IERR)
      POS = 0
      CALL MPI_PACK(A, 1, HV, PBUF, 100, POS, MPI_COMM_WORLD, IERR)
      IF (POS .NE. 12 .OR. IPB(1) .NE. 1 .OR. IPB(2) .NE. 4 .OR.
     &     IPB(3) .NE. 7) CALL FAIL('hvector')
      CALL MPI_TYPE_FREE(HV, IERR)
! MPI_TYPE_HINDEXED: 2 at byte 20 (A(6), A(7)), 1 at byte 0 (A(1)).
      BLS(1) = 2
      BLS(2) = 1
      DISPS(1) = 20
      DISPS(2) = 0
      CALL MPI_TYPE_HINDEXED(2, BLS, DISPS, MPI_INTEGER, HV, IERR)
      CALL MPI_TYPE_COMMIT(HV, IERR)
      POS = 0
      CALL MPI_PACK(A, 1, HV, PBUF, 100, POS, MPI_COMM_WORLD, IERR)
      IF (POS .NE. 12 .OR. IPB(1) .NE. 6 .OR. IPB(2) .NE. 7 .OR.
     &     IPB(3) .NE. 1) CALL FAIL('hindexed')
      CALL MPI_TYPE_FREE(HV, IERR)
! MPI-1's error handler names.
      CALL MPI_ERRHANDLER_GET(MPI_COMM_WORLD, EH, IERR)
      IF (EH .NE. MPI_ERRORS_ARE_FATAL) CALL FAIL('errhandler_get')
      CALL MPI_ERRHANDLER_SET(MPI_COMM_WORLD, MPI_ERRORS_RETURN, IERR)
      CALL MPI_ERRHANDLER_GET(MPI_COMM_WORLD, EH2, IERR)
      IF (EH2 .NE. MPI_ERRORS_RETURN) CALL FAIL('errhandler_set')
      CALL MPI_SEND(A, 1, MPI_INTEGER, NPROCS, 0, MPI_COMM_WORLD, IERR)
      IF (IERR .NE. MPI_ERR_RANK) CALL FAIL('error returned')
      CALL MPI_FINALIZE(IERR)
      IF (RANK .EQ. 0) PRINT *, 'f_mpi1 ok'
      END

      SUBROUTINE ADDTEN(OLDCOMM, KEYVAL, EXTRA, VALIN, VALOUT, FLAG,
     &     IERR)
      INTEGER OLDCOMM, KEYVAL, EXTRA, VALIN, VALOUT, IERR
      LOGICAL FLAG
      COMMON /CNT/ NCOPY
      INTEGER NCOPY
      NCOPY = NCOPY + 1
      VALOUT = VALIN + EXTRA
      FLAG = .TRUE.
      IERR = 0
      END

      SUBROUTINE FAIL(WHAT)
      CHARACTER*(*) WHAT
      INCLUDE 'mpif.h'
      INTEGER IERR
      PRINT *, 'FAIL: ', WHAT
      CALL MPI_ABORT(MPI_COMM_WORLD, 99, IERR)
      END
