package core

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeRun(t *testing.T) {
	tests := []struct {
		payload string
		want    string // error text, "" = ok
	}{
		{`"code"`, "invalid request: expected a JSON object"},
		{`null`, "invalid request: expected a JSON object"},
		{`{}`, "invalid request: `code` is required"},
		{`{"code": null}`, "invalid request: `code` is required"},
		{`{"keep": "yes"}`, "invalid request: `code` is required"}, // first problem in property order
		{`{"code": 1}`, "invalid request: `code` must be a string"},
		{`{"code": "", "keep": 1}`, "invalid request: `keep` must be a boolean"},
		{`{"code": "", "lang": "ruby"}`, "invalid request: `lang` must be \"node\" or \"python\""},
		{`{"code": "", "runtime_id": 5}`, "invalid request: `runtime_id` must be a string"},
		{`{"code": "", "timeout_ms": -1}`, "invalid request: `timeout_ms` must be a non-negative integer"},
		{`{"code": "", "timeout_ms": 1.5}`, "invalid request: `timeout_ms` must be a non-negative integer"},
		{`{"code": "", "memory_mb": 4294967296}`, "invalid request: `memory_mb` must be a non-negative integer"},
		{`{"code": "x", "lang": null, "runtime_id": null, "timeout_ms": null, "memory_mb": null, "_caller_worker_id": "w", "network": true}`, ""},
		{`{"code": "x", "timeout_ms": 5.0, "memory_mb": 0}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.payload, func(t *testing.T) {
			_, err := DecodeRun(json.RawMessage(tc.payload), testLangs)
			got := ""
			if err != nil {
				got = strings.TrimPrefix(err.Error(), "code-runner::invalid_request: ")
			}
			if got != tc.want {
				t.Fatalf("got %q want %q", got, tc.want)
			}
		})
	}
	r, _ := DecodeRun(json.RawMessage(`{"code":"c","keep":true,"lang":"python","runtime_id":"rt-1","timeout_ms":250,"memory_mb":0}`), testLangs)
	if r.Code != "c" || !r.Keep || r.Lang != LangPython || r.RuntimeID != "rt-1" || r.TimeoutMS != 250 || r.MemoryMB == nil || *r.MemoryMB != 0 {
		t.Fatalf("%+v", r)
	}
}

func TestDecodeRegisterAndTeardown(t *testing.T) {
	if _, err := DecodeRegister(json.RawMessage(`{"function_id":"a::b","source":"x"}`), testLangs); err == nil || !strings.HasSuffix(err.Error(), "`lang` is required") {
		t.Fatalf("%v", err)
	}
	if _, err := DecodeRegister(json.RawMessage(`{"description":3,"function_id":"a::b","lang":"node","source":"x"}`), testLangs); err == nil || !strings.HasSuffix(err.Error(), "`description` must be a string") {
		t.Fatalf("%v", err)
	}
	r, err := DecodeRegister(json.RawMessage(`{"function_id":"a::b","lang":"node","source":"x","request_format":{"type":"object"},"response_format":null}`), testLangs)
	if err != nil || r.RequestFormat == nil || r.ResponseFormat != nil || r.Description != nil {
		t.Fatalf("%+v %v", r, err)
	}
	td, err := DecodeTeardown(json.RawMessage(`{"namespace":"app","runtime_id":null}`))
	if err != nil || td.Namespace != "app" || td.RuntimeID != "" {
		t.Fatalf("%+v %v", td, err)
	}
}

func TestCheckFormat(t *testing.T) {
	big := `{"type":"object","description":"` + strings.Repeat("x", 16400) + `"}`
	tests := []struct{ raw, want string }{
		{`"object"`, `request_format must be a JSON Schema OBJECT, e.g. {"type": "object"} — got a string`},
		{`[]`, `request_format must be a JSON Schema OBJECT, e.g. {"type": "object"} — got an array`},
		{`12`, `request_format must be a JSON Schema OBJECT, e.g. {"type": "object"} — got a number`},
		{`true`, `request_format must be a JSON Schema OBJECT, e.g. {"type": "object"} — got a boolean`},
		{`null`, `request_format must be a JSON Schema OBJECT, e.g. {"type": "object"} — got null`},
		{`{}`, `request_format constrains nothing — a schema needs at least one of ["type", "properties", "$ref", "enum", "const", "anyOf", "oneOf", "allOf", "not", "items"] at its top level (an empty object is the "any" you already get by omitting the field)`},
		{big, "request_format is 16434 bytes serialized; the limit is 16384"},
		{`{"anyOf":[{"type":"string"}]}`, ""},
	}
	for _, tc := range tests {
		name := tc.raw
		if len(name) > 30 {
			name = name[:30]
		}
		t.Run(name, func(t *testing.T) {
			err := CheckFormat("request_format", json.RawMessage(tc.raw))
			got := ""
			if err != nil {
				got = strings.TrimPrefix(err.Error(), "code-runner::invalid_request: ")
			}
			if got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// Every integer field refuses anything that is not a non-negative integer
// JSON number — a quoted number included — with the exact R1 text.
func TestDecodeRunIntegerFieldsRefuseNonIntegers(t *testing.T) {
	for _, field := range []string{"timeout_ms", "memory_mb"} {
		for _, bad := range []string{`"100"`, `1.5`, `-1`, `true`, `{}`, `1e400`, `[]`, `"-0"`} {
			t.Run(field+"="+bad, func(t *testing.T) {
				_, err := DecodeRun(json.RawMessage(`{"lang":"node","code":"return 1","`+field+`":`+bad+`}`), testLangs)
				want := "code-runner::invalid_request: invalid request: `" + field + "` must be a non-negative integer"
				if err == nil || err.Error() != want {
					t.Fatalf("got %v, want %q", err, want)
				}
			})
		}
		for _, good := range []string{`100`, `0`, `1e2`, ` 7 `} {
			t.Run(field+"="+good+" accepted", func(t *testing.T) {
				if _, err := DecodeRun(json.RawMessage(`{"lang":"node","code":"return 1","`+field+`":`+good+`}`), testLangs); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestTheLangFieldNamesTheWorkersEngines: the languages `lang` may take,
// and the refusal's words, are the engines' — with node and python the
// contract's exact text, with a third engine all three.
func TestTheLangFieldNamesTheWorkersEngines(t *testing.T) {
	for _, tc := range []struct {
		langs []Lang
		want  string
	}{
		{[]Lang{"node", "python"}, "code-runner::invalid_request: invalid request: `lang` must be \"node\" or \"python\""},
		{[]Lang{"echo", "node", "python"}, "code-runner::invalid_request: invalid request: `lang` must be \"echo\", \"node\" or \"python\""},
		{[]Lang{"node"}, "code-runner::invalid_request: invalid request: `lang` must be \"node\""},
	} {
		if _, err := DecodeRun(json.RawMessage(`{"code":"","lang":"ruby"}`), tc.langs); err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v, want %q", tc.langs, err, tc.want)
		}
		if _, err := DecodeRegister(json.RawMessage(`{"function_id":"a::b","lang":"ruby","source":"x"}`), tc.langs); err == nil || err.Error() != tc.want {
			t.Errorf("register, %v: %v, want %q", tc.langs, err, tc.want)
		}
		last := tc.langs[len(tc.langs)-1]
		if r, err := DecodeRun(json.RawMessage(`{"code":"","lang":"`+string(last)+`"}`), tc.langs); err != nil || r.Lang != last {
			t.Errorf("%v: lang %q refused: %v", tc.langs, last, err)
		}
	}
}
