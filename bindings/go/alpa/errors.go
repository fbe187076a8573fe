package alpa

/*
#include "alpa.h"
*/
import "C"

import "fmt"

// Status is a libalpa status code (ALPA_OK, ALPA_ERR_*); the values are the C ones.
type Status int32

// The statuses of alpa.h.
const (
	StatusOK              Status = C.ALPA_OK
	StatusInvalidArgument Status = C.ALPA_ERR_INVALID_ARGUMENT
	StatusInvalidProblem  Status = C.ALPA_ERR_INVALID_PROBLEM
	StatusInfeasible      Status = C.ALPA_ERR_INFEASIBLE
	StatusTimeout         Status = C.ALPA_ERR_TIMEOUT
	StatusCancelled       Status = C.ALPA_ERR_CANCELLED
	StatusUnsupported     Status = C.ALPA_ERR_UNSUPPORTED
	StatusOutOfMemory     Status = C.ALPA_ERR_OUT_OF_MEMORY
	StatusInternal        Status = C.ALPA_ERR_INTERNAL
	StatusIO              Status = C.ALPA_ERR_IO
	StatusParse           Status = C.ALPA_ERR_PARSE
	StatusInvalidGraph    Status = C.ALPA_ERR_INVALID_GRAPH
)

// String is the library's name of the status ("invalid argument", "infeasible", ...).
func (s Status) String() string { return C.GoString(C.alpa_status_string(C.int32_t(s))) }

// Error is a failed libalpa call: the status and the library's message, which names the
// offending element ("node 12 has no strategies", "unknown model family \"nope\"").
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "alpa: " + e.Status.String()
	}
	return fmt.Sprintf("alpa: %s: %s", e.Status, e.Message)
}

// Is reports whether target is an *Error of the same status with no message (the sentinels
// below), or an equal *Error, so that errors.Is(err, alpa.ErrInfeasible) tests the status.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Status == e.Status && (t.Message == "" || t.Message == e.Message)
}

// Sentinels, one per status, for errors.Is.
var (
	ErrInvalidArgument = &Error{Status: StatusInvalidArgument}
	ErrInvalidProblem  = &Error{Status: StatusInvalidProblem}
	ErrInfeasible      = &Error{Status: StatusInfeasible}
	ErrTimeout         = &Error{Status: StatusTimeout}
	ErrCancelled       = &Error{Status: StatusCancelled}
	ErrUnsupported     = &Error{Status: StatusUnsupported}
	ErrOutOfMemory     = &Error{Status: StatusOutOfMemory}
	ErrInternal        = &Error{Status: StatusInternal}
	ErrIO              = &Error{Status: StatusIO}
	ErrParse           = &Error{Status: StatusParse}
	ErrInvalidGraph    = &Error{Status: StatusInvalidGraph}
)

// takeError turns a status and the alpa_error the call filled in into a Go error, copying the
// message and freeing the alpa_error. nil for ALPA_OK.
func takeError(status C.int32_t, e *C.alpa_error) error {
	if e != nil {
		defer C.alpa_error_free(e)
	}
	if status == C.ALPA_OK {
		return nil
	}
	out := &Error{Status: Status(status)}
	if e != nil {
		out.Status = Status(C.alpa_error_code(e))
		out.Message = C.GoString(C.alpa_error_message(e))
	}
	return out
}

// statusError is an error made by the binding itself (no alpa_error to copy).
func statusError(s Status, message string) error {
	return &Error{Status: s, Message: message}
}

func closedError(what string) error {
	return statusError(StatusInvalidArgument, what+" is closed")
}
