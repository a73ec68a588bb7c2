# mk/aarch64.mk - the aarch64 build (included by the Makefile).
#
#   make ARCH=aarch64   build/aarch64/sluice and the unit tests of A64_TESTS
#   make test-aarch64   those tests under qemu-aarch64, once per A64_CPUS model
#
# On an x86 host the compiler is Debian's gcc-aarch64-linux-gnu and the tests
# run under qemu-user (scripts/install-deps.sh --aarch64 installs both); on an
# aarch64 host CC builds natively and the tests run directly. The binaries
# are static (qemu needs no library prefix; Android needs no dynamic linker
# of ours) and link the arm64 builds of PCRE2, jansson and libmicrohttpd
# (no HTTPS) from A64_SYSROOT (scripts/aarch64-sysroot.sh). Left out:
# liburing (reads use pread lanes).
#
# Instruction sets: everything is built for plain ARMv8.0-A (NEON is part of
# it), so the binary runs on a Cortex-A53; only *_dotprod.c files get
# -march=armv8.2-a+dotprod, and their functions are called after the run-time
# check (src/util/cpu.c, getauxval(AT_HWCAP) & HWCAP_ASIMDDP).

A64 := build/aarch64
ifeq ($(HOST_ARCH),aarch64)
  A64_CC ?= $(CC)
  A64_RUN ?=
else
  A64_CC ?= aarch64-linux-gnu-gcc
  A64_RUN ?= qemu-aarch64
endif
A64_SYSROOT ?= $(A64)/sysroot
A64_STAMP := $(A64_SYSROOT)/.complete-serve
A64_FLAGS := $(CSTD) $(WARN) -O2 -g -march=armv8-a -isystem $(A64_SYSROOT)/usr/include
A64_DOTPROD := -march=armv8.2-a+dotprod
A64_LIBS := -static -L$(A64_SYSROOT)/usr/lib/aarch64-linux-gnu -lpcre2-8 -ljansson -lmicrohttpd -lpthread -lm
A64_APP_SRC := $(APP_SRC)
# attn_kernels_avx2.c needs immintrin.h; attn_kernels.c answers NULL for it off x86
A64_LIB_SRC := $(filter-out src/ops/attn_kernels_avx2.c,$(LIB_SRC))
A64_LIB_OBJ := $(A64_LIB_SRC:%.c=$(A64)/%.o)
A64_APP_OBJ := $(A64_APP_SRC:%.c=$(A64)/%.o)
A64_COMMON_OBJ := $(TEST_COMMON:%.c=$(A64)/%.o)

# The emulated subset: kernels (every bit-identity test), the forward pass,
# GGUF, tokenizers, I/O and streaming. qemu runs them some 10-40x slower
# than the host; the list keeps both cpu models under the CI budget
# (docs/ARCHITECTURE.md, "Platforms", "ARM64 (aarch64)").
A64_TESTS ?= test_neon_bits test_io_direct_check test_quant_dot test_quant_dot_n test_quant_dequant test_quant_fast \
  test_quant_fp test_quant_roundtrip test_vec_dot_legacy_bits test_vec_dot_rp test_vexp \
  test_attn_kernels test_attn_sinks test_synth_rng test_gguf test_gguf_corrupt test_gguf_direct \
  test_tok test_tok_pretok test_tok_golden test_io test_io_fault test_file test_stream \
  test_expert_cache test_vecdot_rp32x8 test_vecdot_rp32 test_vecdot_fp_order test_vecdot_iq4xs \
  test_matmul_form
A64_TEST_BINS := $(A64_TESTS:%=$(A64)/tests/%)
# max: every extension qemu knows (dotprod, i8mm); cortex-a53: ARMv8.0, NEON only
A64_CPUS ?= max cortex-a53

# A native build on an ARM host (Linux aarch64, macOS arm64: `make`, the
# sanitizer and TSan builds) compiles the *_dotprod.c files with the
# extension too; the rest keeps the compiler's default target. (A pattern
# with the longer fixed part wins over the generic %.o rules.)
ifneq ($(filter aarch64 arm64,$(HOST_ARCH)),)
$(REL)/%_dotprod.o: %_dotprod.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(OPT) $(CDEFS) $(INC) $(DEPFLAGS) $(A64_DOTPROD) -c $< -o $@

$(SAN)/%_dotprod.o: %_dotprod.c
	@mkdir -p $(dir $@)
	$(SAN_CC) $(CSTD) $(WARN) $(SAN_FLAGS) $(CDEFS) $(INC) $(DEPFLAGS) $(A64_DOTPROD) -c $< -o $@

$(TSAN)/%_dotprod.o: %_dotprod.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(TSAN_FLAGS) $(CDEFS) $(INC) $(DEPFLAGS) $(A64_DOTPROD) -c $< -o $@
endif

$(A64_STAMP):
	A64_CC="$(A64_CC)" ./scripts/aarch64-sysroot.sh $(A64_SYSROOT)

$(A64)/%_dotprod.o: %_dotprod.c | $(A64_STAMP)
	@mkdir -p $(dir $@)
	$(A64_CC) $(A64_FLAGS) $(A64_DOTPROD) $(INC) $(DEPFLAGS) -c $< -o $@

$(A64)/%.o: %.c | $(A64_STAMP)
	@mkdir -p $(dir $@)
	$(A64_CC) $(A64_FLAGS) $(INC) -Iapp -Itests $(DEPFLAGS) -c $< -o $@

$(A64)/libsluice.a: $(A64_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(A64)/sluice: $(A64_APP_OBJ) $(A64)/libsluice.a
	$(A64_CC) -o $@ $(A64_APP_OBJ) $(A64)/libsluice.a $(A64_LIBS)

$(A64)/tests/%: $(A64)/tests/unit/%.o $(A64_COMMON_OBJ) $(A64)/libsluice.a
	@mkdir -p $(dir $@)
	$(A64_CC) -o $@ $< $(A64_COMMON_OBJ) $(A64)/libsluice.a $(A64_LIBS)

aarch64: $(A64)/sluice $(A64_TEST_BINS)

test-aarch64: aarch64
	./scripts/run-aarch64.sh "$(A64_RUN)" "$(A64_CPUS)" $(A64_TEST_BINS)
