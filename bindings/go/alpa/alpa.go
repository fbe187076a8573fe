// Package alpa is the Go binding of libalpa, an automatic parallelization planner for deep
// learning (Alpa re-created). It sits on the C ABI (alpa.h and alpa_experimental.h) alone and
// finds the library with pkg-config ("#cgo pkg-config: alpa").
//
// Conventions:
//   - Every failure is an error whose dynamic type is *Error, carrying the library's status and
//     message; errors.Is(err, ErrInfeasible) (ErrCancelled, ErrInvalidArgument, ...) tests the
//     status. "No answer" (infeasible, a time limit or a cancellation before any answer) is an
//     error, as in the C ABI.
//   - Every handle type (Problem, Solution, Graph, Cluster, Mesh, ShardingPlan, Plan, Simulation,
//     CancelToken) has Close, which frees the C object at once, and a finalizer that frees it
//     when the handle is garbage collected unclosed. LiveHandles counts the handles not freed yet.
//     Methods of a closed handle return an error (ErrInvalidArgument) or the zero answer of the
//     C getter (NaN, 0, "").
//   - Threading follows docs/threading.md: a finalized Problem or Graph, a Solution, Cluster,
//     Mesh, ShardingPlan, Plan and Simulation may be used from several goroutines at once;
//     building a Problem or Graph needs exclusive access. Close must not race with other calls
//     on the same handle. CancelToken.Trigger may be called from any goroutine.
//   - The binding keeps no Go pointer in C memory: callbacks reach Go through runtime/cgo
//     handles, and inputs are copied by the library during the call.
package alpa

/*
#cgo pkg-config: alpa
#include <stdlib.h>
#include "alpa_experimental.h"
*/
import "C"

import (
	"runtime"
	"sort"
	"sync/atomic"
	"unsafe"
)

// Version is the version of the libalpa actually loaded ("0.1.0").
func Version() string { return C.GoString(C.alpa_version_string()) }

// VersionNumber is ALPA_VERSION_NUMBER of the library actually loaded (major*10000 +
// minor*100 + patch).
func VersionNumber() int { return int(C.alpa_version_number()) }

// HeaderVersionNumber is ALPA_VERSION_NUMBER of the header this binding was compiled against.
const HeaderVersionNumber = int(C.ALPA_VERSION_NUMBER)

// ---- live handle accounting ------------------------------------------------------------------

var liveHandles int64

// LiveHandles is the number of handles created by this binding and not freed yet (by Close or
// by a finalizer). Every constructor increments it and every free decrements it; tests use it
// to prove that nothing leaks.
func LiveHandles() int64 { return atomic.LoadInt64(&liveHandles) }

func handleCreated() { atomic.AddInt64(&liveHandles, 1) }
func handleFreed()   { atomic.AddInt64(&liveHandles, -1) }

// ---- helpers ---------------------------------------------------------------------------------

// cString copies s into C memory; the caller frees it with C.free.
func cString(s string) *C.char { return C.CString(s) }

func freeCString(p *C.char) { C.free(unsafe.Pointer(p)) }

// bytesPtr points at the first byte of b for the duration of a call, or nil when b is empty.
func bytesPtr(b []byte) *C.char {
	if len(b) == 0 {
		return nil
	}
	return (*C.char)(unsafe.Pointer(&b[0]))
}

func i32Ptr(s []int32) *C.int32_t {
	if len(s) == 0 {
		return nil
	}
	return (*C.int32_t)(unsafe.Pointer(&s[0]))
}

func i64Ptr(s []int64) *C.int64_t {
	if len(s) == 0 {
		return nil
	}
	return (*C.int64_t)(unsafe.Pointer(&s[0]))
}

func f64Ptr(s []float64) *C.double {
	if len(s) == 0 {
		return nil
	}
	return (*C.double)(unsafe.Pointer(&s[0]))
}

// takeBuffer copies an alpa_buffer into Go memory and frees it.
func takeBuffer(b *C.alpa_buffer) []byte {
	defer C.alpa_buffer_free(b)
	n := int(C.alpa_buffer_size(b))
	out := make([]byte, n)
	if n > 0 {
		copy(out, unsafe.Slice((*byte)(unsafe.Pointer(C.alpa_buffer_data(b))), n))
	}
	return out
}

// countThenFill runs a count-then-fill getter: once with capacity 0 to size the buffer, then to
// fill it. A negative answer is the negated status (-ALPA_ERR_INVALID_ARGUMENT, ...).
func countThenFill[T any](what string, get func(out *T, capacity C.int64_t) C.int64_t) ([]T, error) {
	n := get(nil, 0)
	if n < 0 {
		return nil, statusError(Status(-n), what)
	}
	out := make([]T, int(n))
	if n == 0 {
		return out, nil
	}
	m := get(&out[0], n)
	if m < 0 {
		return nil, statusError(Status(-m), what)
	}
	if m < n {
		out = out[:int(m)]
	}
	return out, nil
}

func toInt32s(s []C.int32_t) []int32 {
	out := make([]int32, len(s))
	for i, v := range s {
		out[i] = int32(v)
	}
	return out
}

func toInt64s(s []C.int64_t) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[i] = int64(v)
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// keepAlive is runtime.KeepAlive for several values.
func keepAlive(xs ...interface{}) {
	for _, x := range xs {
		runtime.KeepAlive(x)
	}
}
