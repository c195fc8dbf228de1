# Thin layer over cargo: build, lay out an MPI installation, refresh the header.
#   make                      release build
#   make install PREFIX=DIR   DIR/bin (mpicc mpicxx mpic++ mpiCC mpif90 mpifort mpif77 mpirun mpiexec),
#                             DIR/include (mpi.h mpif.h mpi.mod), DIR/lib
#   make header               copy the generated mpi.h into include/
PREFIX ?= $(CURDIR)/build/prefix
CARGO ?= cargo
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
REL := target/release

.PHONY: all build install header clean

all: build

build:
	$(CARGO) build --release --lib --bins

header: build
	cp "$$(ls -t $(REL)/build/oxmpi-*/out/mpi.h | head -1)" include/mpi.h

install: build
	mkdir -p $(PREFIX)/bin $(PREFIX)/lib/pkgconfig $(PREFIX)/include
	install -m 755 $(REL)/liboxmpi.so $(PREFIX)/lib/libmpi.so.12.0.0
	ln -sf libmpi.so.12.0.0 $(PREFIX)/lib/libmpi.so.12
	ln -sf libmpi.so.12 $(PREFIX)/lib/libmpi.so
	ln -sf libmpi.so.12 $(PREFIX)/lib/libmpich.so.12
	ln -sf libmpi.so.12 $(PREFIX)/lib/libmpich.so
	ln -sf libmpi.so.12 $(PREFIX)/lib/libmpifort.so.12
	ln -sf libmpi.so.12 $(PREFIX)/lib/libmpichfort.so.12
	install -m 644 include/mpif.h $(PREFIX)/include/mpif.h
	if command -v gfortran >/dev/null; then \
	  mkdir -p build/fmod && gfortran -shared -fPIC fortran/mpi.f90 fortran/mpi_f08.f90 -I include \
	    -J $(PREFIX)/include -o $(PREFIX)/lib/libmpi_usempi.so -L$(PREFIX)/lib -lmpi -Wl,-rpath,'$$ORIGIN'; \
	fi
	install -m 644 include/mpi.h $(PREFIX)/include/mpi.h
	install -m 755 $(REL)/mpirun $(PREFIX)/bin/mpirun
	ln -sf mpirun $(PREFIX)/bin/mpiexec
	sed -e 's|@VERSION@|$(VERSION)|' tools/mpicc.in > $(PREFIX)/bin/mpicc && chmod 755 $(PREFIX)/bin/mpicc
	ln -sf mpicc $(PREFIX)/bin/mpicxx
	ln -sf mpicc $(PREFIX)/bin/mpic++
	ln -sf mpicc $(PREFIX)/bin/mpiCC
	ln -sf mpicc $(PREFIX)/bin/mpif90
	ln -sf mpicc $(PREFIX)/bin/mpifort
	ln -sf mpicc $(PREFIX)/bin/mpif77
	sed -e 's|@PREFIX@|$(abspath $(PREFIX))|' -e 's|@VERSION@|$(VERSION)|' tools/mpi.pc.in > $(PREFIX)/lib/pkgconfig/mpi.pc
	# Every name build systems ask pkg-config for: ours, Debian's and Open
	# MPI's per-language names (Meson asks for ompi-c / ompi-cxx / ompi-fort),
	# and MPICH's.
	for n in oxmpi mpi-c mpi-cxx mpi-fort ompi ompi-c ompi-cxx ompi-fort mpich; do \
	  ln -sf mpi.pc $(PREFIX)/lib/pkgconfig/$$n.pc; \
	done

clean:
	$(CARGO) clean
	rm -rf build
