package core

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestErrorWireShape(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{Errorf(CodeInvalidRequest, "invalid request: `code` is required"), `{"code":"code-runner::invalid_request","message":"code-runner::invalid_request: invalid request: ` + "`code`" + ` is required"}`},
		{ErrUnknownRuntime("rt-x"), `{"code":"code-runner::runtime_not_found","message":"code-runner::runtime_not_found: unknown runtime_id rt-x"}`},
		{ErrExpired("rt-x"), `{"code":"code-runner::expired","message":"code-runner::expired: runtime rt-x expired: it was reaped or killed and its functions unregistered — call run again without this runtime_id to get a fresh one (its scratch directory starts empty)"}`},
		{ErrCapacity(8), `{"code":"code-runner::capacity","message":"code-runner::capacity: all 8 runtime slots are in use"}`},
		{ErrTimeout(), `{"code":"code-runner::timeout","message":"code-runner::timeout: execution exceeded its deadline"}`},
		{Errorf(CodeHandlerError, "Error: boom"), `{"code":"code-runner::handler_error","message":"code-runner::handler_error: Error: boom"}`},
		{ErrLostMidRun(), `{"code":"code-runner::engine","message":"code-runner::engine: the run's runtime was reaped or lost mid-run; retry"}`},
		{ErrDiskBudget(256, 20000, "/work"), `{"code":"code-runner::resource_exhausted","message":"code-runner::resource_exhausted: run wrote more than 256 bytes (or more than 20000 files) under /work and was killed"}`},
	}
	seen := map[Code]bool{}
	for _, tc := range tests {
		t.Run(string(tc.err.Code), func(t *testing.T) {
			b, err := json.Marshal(tc.err)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("got  %s\nwant %s", b, tc.want)
			}
		})
		seen[tc.err.Code] = true
	}
	for _, c := range Codes {
		if !seen[c] {
			t.Errorf("code %s has no wire-shape case", c)
		}
	}
	if len(Codes) != 8 {
		t.Fatalf("%d codes, docs/behaviour.md#errors-codes has eight", len(Codes))
	}
}

func TestAsErrorWrapsForeignErrors(t *testing.T) {
	e := AsError(errors.New("disk on fire"), "code-runner::run")
	if e.Code != CodeEngine || e.Error() != "code-runner::engine: internal error while handling code-runner::run; see the worker logs" {
		t.Fatalf("%v", e)
	}
	if e.Cause == nil || e.Cause.Error() != "disk on fire" {
		t.Fatal("cause lost")
	}
	orig := ErrTimeout()
	if AsError(orig, "x") != orig {
		t.Fatal("an *Error must pass through unchanged")
	}
}

func TestMemoryCapTextsNameTheCapAndTheFix(t *testing.T) {
	for _, tc := range []struct {
		subject string
		mib     int64
		want    string
	}{
		{"the runtime", 128, "the runtime exceeded its memory cap of 128 MiB and was killed (a run that creates a runtime may ask for up to 512 MiB with memory_mb)"},
		{"run", 511, "run exceeded its memory cap of 511 MiB and was killed (a run that creates a runtime may ask for up to 512 MiB with memory_mb)"},
		{"run", 512, "run exceeded its memory cap of 512 MiB and was killed"},
		{"the runtime", 1024, "the runtime exceeded its memory cap of 1024 MiB and was killed"},
	} {
		e := ErrMemoryCap(tc.subject, tc.mib)
		if e.Text != tc.want || e.Code != CodeResourceExhausted || e.Kill != KillMemory {
			t.Errorf("%s %d: %+v", tc.subject, tc.mib, e)
		}
	}
}
