// Package jsonx encodes JSON the way code-runner puts it on the wire and
// measures it: compact, with <, > and & kept as they are (encoding/json
// escapes them by default, also inside a json.RawMessage it embeds) and with
// U+2028 / U+2029 as raw UTF-8 (encoding/json always escapes those two).
// Guest values measured against a cap or sent to a caller must never grow
// on the way.
package jsonx

import (
	"bytes"
	"encoding/json"
)

// Marshal encodes v like json.Marshal, without HTML escaping and with line
// and paragraph separators left raw.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return unescapeSeparators(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// unescapeSeparators turns the escapes \u2028 and \u2029 back into raw
// UTF-8. b is valid JSON, so a backslash only ever starts an escape inside
// a string; escapes are skipped whole, so an escaped backslash followed by
// "u2028" text is left alone.
func unescapeSeparators(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u202`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' || i+1 >= len(b) {
			out = append(out, c)
			continue
		}
		if b[i+1] == 'u' && i+5 < len(b) && b[i+2] == '2' && b[i+3] == '0' && b[i+4] == '2' && (b[i+5] == '8' || b[i+5] == '9') {
			out = append(out, 0xE2, 0x80, 0xA8+(b[i+5]-'8'))
			i += 5
			continue
		}
		out = append(out, c, b[i+1])
		i++
	}
	return out
}
