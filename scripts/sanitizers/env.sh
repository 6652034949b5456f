# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# The sanitizer environment of scripts/sanitize.sh and scripts/fuzz.sh:
# source it to reproduce their runs by hand. docs/guides/testing.md says
# why each setting.
distopt_sanitizers=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Leaks count (LeakSanitizer at exit); stop at the first report.
# allow_user_poisoning=0: llvm::BumpPtrAllocator (MLIR's attribute and type
# storage) poisons its slabs when compiled with ASan and unpoisons each
# allocation. Our code inlines the instrumented allocator, Debian's libMLIR
# the plain one, and both allocate from the same context's allocator: an
# object libMLIR allocates in a slab our code poisoned stays poisoned, and
# the next read of it is a false use-after-poison (seen at once when
# fuzzing, in NamedAttrList(DictionaryAttr)).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:allow_user_poisoning=0:check_initialization_order=1:strict_init_order=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$distopt_sanitizers/lsan.supp:print_suppressions=0}
# UBSan reports are recoverable in the build (so that suppressions work)
# and fatal here.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-suppressions=$distopt_sanitizers/ubsan.supp:print_stacktrace=1:halt_on_error=1}
# MPICH's UCX patches mmap's code at start-up (libucm's "bistro" hooks),
# which jumps into ASan's mmap interceptor and segfaults before main: use
# no mmap hooks (UCX then relies on its other memory events).
export UCX_MEM_MMAP_HOOK_MODE=none
# hwloc (MPICH's topology discovery) loads its PCI plugin with dlopen and
# unloads it at MPI_Finalize; libpciaccess's allocations made there are
# then reported as leaks of an "<unknown module>" that no suppression can
# name. MPICH needs no PCI topology on one node.
export HWLOC_PLUGINS_BLACKLIST=hwloc_pci
