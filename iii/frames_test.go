package iii_test

import (
	"errors"
	"testing"

	"github.com/code-runner-go/code-runner/iii"
)

const uuid1 = "c0b265fe-e9ab-40cc-8dde-a28b2645df71"

// TestDecodeFrameRequiresFieldsByPresence: a known frame's required fields
// must be sent, whatever their value — an empty string or null counts as
// sent, a missing key does not.
func TestDecodeFrameRequiresFieldsByPresence(t *testing.T) {
	for _, tc := range []struct {
		name, frame string
		ok          bool
	}{
		{"invoke", `{"type":"invokefunction","function_id":"a::b","invocation_id":"` + uuid1 + `","data":{"x":1}}`, true},
		{"invoke with null data", `{"type":"invokefunction","function_id":"a::b","data":null}`, true},
		{"invoke with an empty function id", `{"type":"invokefunction","function_id":"","data":1}`, true},
		{"invoke without data", `{"type":"invokefunction","function_id":"a::b"}`, false},
		{"invoke without a function id", `{"type":"invokefunction","data":{}}`, false},
		{"invoke with a null function id", `{"type":"invokefunction","function_id":null,"data":{}}`, true},
		{"invoke with a bad invocation id", `{"type":"invokefunction","function_id":"a","invocation_id":"x","data":{}}`, false},
		{"result", `{"type":"invocationresult","invocation_id":"` + uuid1 + `","function_id":"a","result":1}`, true},
		{"result without a function id", `{"type":"invocationresult","invocation_id":"` + uuid1 + `"}`, false},
		{"result with an empty function id", `{"type":"invocationresult","invocation_id":"` + uuid1 + `","function_id":""}`, true},
		{"result without an invocation id", `{"type":"invocationresult","function_id":"a"}`, false},
		{"register function", `{"type":"registerfunction","id":"a::b"}`, true},
		{"register function with an empty id", `{"type":"registerfunction","id":""}`, true},
		{"register function without an id", `{"type":"registerfunction"}`, false},
		{"trigger type", `{"type":"registertriggertype","id":"t","description":"d"}`, true},
		{"trigger type with a null description", `{"type":"registertriggertype","id":"t","description":null}`, true},
		{"trigger type without a description", `{"type":"registertriggertype","id":"t"}`, false},
		{"trigger", `{"type":"registertrigger","id":"t","trigger_type":"x","function_id":"f","config":{}}`, true},
		{"trigger with null config", `{"type":"registertrigger","id":"t","trigger_type":"x","function_id":"f","config":null}`, true},
		{"trigger without config", `{"type":"registertrigger","id":"t","trigger_type":"x","function_id":"f"}`, false},
		{"trigger without a trigger type", `{"type":"registertrigger","id":"t","function_id":"f","config":{}}`, false},
		{"trigger result", `{"type":"triggerregistrationresult","id":"t","trigger_type":"","function_id":"f"}`, true},
		{"worker registered", `{"type":"workerregistered","worker_id":"w"}`, true},
		{"worker registered without an id", `{"type":"workerregistered"}`, false},
		{"reattach with an empty id", `{"type":"reattach","previous_worker_id":""}`, true},
		{"reattach without an id", `{"type":"reattach"}`, false},
		{"unknown type", `{"type":"somethingnew"}`, true},
		{"no type", `{"function_id":"a"}`, false},
		{"not an object", `[1]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := iii.DecodeFrame([]byte(tc.frame))
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if f.Type == iii.TypeInvokeFunction && f.Data == nil {
					t.Fatal("an invocation decoded without data")
				}
				return
			}
			if !errors.Is(err, iii.ErrMalformed) {
				t.Fatalf("want ErrMalformed, got %v (%+v)", err, f)
			}
		})
	}
}

// BenchmarkDecodeFrame: one invocation as the engine sends it.
func BenchmarkDecodeFrame(b *testing.B) {
	frame := []byte(`{"type":"invokefunction","invocation_id":"` + uuid1 + `","function_id":"code-runner::run","data":{"lang":"python","code":"result = 1","runtime_id":"rt-4a667f58-cd07-44b3-b4cc-1fc606ed8513"},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := iii.DecodeFrame(frame); err != nil {
			b.Fatal(err)
		}
	}
}
