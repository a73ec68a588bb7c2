# mk/windows.mk - the Windows build (included by the Makefile).
#
#   make windows        build/windows/sluice.exe and the unit tests of WIN_TESTS
#   make test-windows   those tests, tests/cli/windows.sh and windows_serve.sh under wine
#
# Compiler: Debian's clang targeting x86_64-w64-mingw32, with the mingw-w64
# CRT, headers and winpthreads (gcc-mingw-w64-x86-64) and lld. Not mingw-w64
# GCC: it does not realign the stack for 32-byte AVX spills on Win64 (GCC bug
# 54412) and wine does not fault on the misaligned vmovaps that follow
# (docs/ARCHITECTURE.md, "Windows"). The exe is static: PCRE2, jansson and
# libmicrohttpd come from WIN_SYSROOT (scripts/windows-sysroot.sh builds them
# from Debian's source packages), winpthreads and the CRT from mingw-w64;
# its imports are Windows' own DLLs (ws2_32 for the server's sockets).
# printf and friends are mingw-w64's C99 ones (__USE_MINGW_ANSI_STDIO), not
# msvcrt's, so numbers print as on Linux;
# expf, logf, powf, sinf, cosf, tanhf are glibc 2.36's twins
# (util/libm_glibc.c, mapped by posix_win.h), so results match it too.
#
# Platform files: the POSIX ones named in WIN_SRC_OUT are left out and
# *_win.c put in; on Linux the *_win.c files are not compiled.

WIN := build/windows
WIN_CC ?= clang
WIN_TARGET := --target=x86_64-w64-mingw32
WIN_GCC_LIB := $(lastword $(sort $(wildcard /usr/lib/gcc/x86_64-w64-mingw32/*-posix)))
WIN_SYSROOT ?= $(WIN)/sysroot
WIN_INC := -Isrc -Iinclude -Isrc/compat/win -I$(GEN)
WIN_STAMP := $(WIN_SYSROOT)/.complete-serve
# force-included into every file (-include leaves it out of the .d files)
WIN_COMPAT := src/compat/win/posix_win.h
WIN_RUN ?= $(if $(wildcard /usr/lib/wine/wine64),/usr/lib/wine/wine64,wine)
WIN_FLAGS := $(WIN_TARGET) $(CSTD) $(WARN) -O2 -g -D__USE_MINGW_ANSI_STDIO=1 -DPCRE2_STATIC \
  -D_WIN32_WINNT=0x0A00 -DUNICODE -D_UNICODE -isystem $(WIN_SYSROOT)/include \
  -include src/compat/win/posix_win.h
WIN_LDFLAGS := $(WIN_TARGET) -fuse-ld=lld -static -L$(WIN_GCC_LIB) -L$(WIN_SYSROOT)/lib
WIN_LIBS := -lpcre2-8 -ljansson -lmicrohttpd -lpthread -lm -lpsapi -lshell32 -lws2_32
WIN_SRC_OUT := src/util/file.c src/util/fd_limit.c src/util/mem.c src/util/aligned.c src/util/console.c src/io/io_files.c src/io/io_pread.c \
  src/util/sock.c src/util/stop_signal.c
WIN_LIB_SRC := $(filter-out $(WIN_SRC_OUT),$(LIB_SRC)) $(sort $(wildcard src/*/*_win.c src/compat/win/*.c))
WIN_APP_SRC := $(filter-out $(WIN_SRC_OUT),$(APP_SRC))
WIN_LIB_OBJ := $(WIN_LIB_SRC:%.c=$(WIN)/%.o)
WIN_APP_OBJ := $(WIN_APP_SRC:%.c=$(WIN)/%.o)
WIN_COMMON_OBJ := $(TEST_COMMON:%.c=$(WIN)/%.o)
# Under wine: the kernel bit tests, GGUF, tokenizers, I/O and streaming,
# session save/load, the thread pool (some 2.5 minutes on 2 cores).
WIN_TESTS ?= test_quant_dot test_quant_dot_n test_quant_dequant test_quant_fast test_quant_fp \
  test_quant_roundtrip test_vec_dot_legacy_bits test_vec_dot_rp test_vexp test_attn_kernels \
  test_vecdot_rp32x8 test_vecdot_rp32 test_vecdot_fp_order test_vecdot_iq4xs test_gguf \
  test_gguf_corrupt test_gguf_direct test_tok test_tok_pretok test_tok_golden test_io \
  test_io_fault test_io_direct_check test_io_ahead test_stream test_expert_cache \
  test_session_save test_usage_history test_threads_pool test_libm_glibc
# the tests that re-run themselves with SLUICE_NO_SIMD=1 by fork on Linux
WIN_NO_SIMD_TESTS := test_quant_dot test_quant_dot_n
WIN_TEST_BINS := $(WIN_TESTS:%=$(WIN)/tests/%.exe)

$(WIN_STAMP):
	./scripts/windows-sysroot.sh $(WIN_SYSROOT)

$(WIN)/%_avx2.o: %_avx2.c $(WIN_COMPAT) | $(WIN_STAMP)
	@mkdir -p $(dir $@)
	$(WIN_CC) $(WIN_FLAGS) $(SIMD_AVX2) $(WIN_INC) -Iapp -Itests $(DEPFLAGS) -c $< -o $@

$(WIN)/%.o: %.c $(WIN_COMPAT) | $(WIN_STAMP)
	@mkdir -p $(dir $@)
	$(WIN_CC) $(WIN_FLAGS) $(WIN_INC) -Iapp -Itests $(DEPFLAGS) -c $< -o $@

$(WIN)/libsluice.a: $(WIN_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(WIN)/sluice.exe: $(WIN_APP_OBJ) $(WIN)/libsluice.a
	$(WIN_CC) $(WIN_LDFLAGS) -o $@ $(WIN_APP_OBJ) $(WIN)/libsluice.a $(WIN_LIBS)

windows: $(WIN)/sluice.exe $(WIN_TEST_BINS)

test-windows: windows $(REL)/sluice
	SLUICE_REL=$(abspath $(REL)/sluice) ./scripts/run-windows.sh "$(WIN_RUN)" \
	  "$(WIN_NO_SIMD_TESTS)" $(WIN_TEST_BINS)

.PHONY: windows test-windows

# ---- unit tests under wine ----------------------------------------------------
$(WIN)/tests/%.exe: $(WIN)/tests/unit/%.o $(WIN_COMMON_OBJ) $(WIN)/libsluice.a
	@mkdir -p $(dir $@)
	$(WIN_CC) $(WIN_LDFLAGS) -o $@ $< $(WIN_COMMON_OBJ) $(WIN)/libsluice.a $(WIN_LIBS)
