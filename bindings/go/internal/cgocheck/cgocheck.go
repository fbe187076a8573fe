// Package cgocheck breaks a cgo pointer rule on purpose, so that the binding's tests can prove
// that GODEBUG=cgocheck=2 is in effect when they run (a test that passes under cgocheck=2 only
// means something if the checker would have caught a violation).
package cgocheck

/*
#include <stdlib.h>
*/
import "C"

import "unsafe"

var sink *int

// StoreGoPointerInCMemory writes a Go pointer into C memory, which cgocheck=2 reports as
// "fatal error: Go pointer stored into non-Go memory" (cgocheck=1 does not see it).
func StoreGoPointerInCMemory() {
	mem := (*unsafe.Pointer)(C.malloc(C.size_t(unsafe.Sizeof(unsafe.Pointer(nil)))))
	x := new(int)
	sink = x
	*mem = unsafe.Pointer(x)
	C.free(unsafe.Pointer(mem))
}
