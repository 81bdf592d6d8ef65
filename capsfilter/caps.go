package capsfilter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/code-runner-go/code-runner/internal/jsonx"
)

// ResultCap applies the result cap (docs/behaviour.md#output-result-cap) to a completion value
// given as its JSON text. A cap of 0 disables it. The value is measured as
// compact JSON with raw UTF-8 and no HTML escaping; when that is at most cap
// bytes the original text is returned unchanged (key order and number
// spelling kept). Otherwise the whole value is replaced by a JSON string
// that describes what was omitted. Text that is not valid JSON is measured
// as is and described as "a value".
func ResultCap(value json.RawMessage, limit int) json.RawMessage {
	if limit <= 0 || len(value) == 0 {
		return value
	}
	var compact bytes.Buffer
	n := len(value)
	if err := json.Compact(&compact, value); err == nil {
		n = compact.Len()
	}
	if n <= limit {
		return value
	}
	return Omitted(n, describeShape(value))
}

// Omitted is the marker that replaces a result of size bytes (its compact
// JSON) over the cap, whose shape is described as describeShape does
// ("a 12-char string", "3 array elements", "2 object keys", "a value"): for
// a runtime that measured a result without encoding it.
func Omitted(size int, shape string) json.RawMessage {
	marker := fmt.Sprintf("<omitted: result was ~%d KB (%s); returning it whole would flood the model context — print a slice, aggregate in code, or write it to iii.files and return a summary>",
		size/1024, shape)
	return encodeString(marker)
}

// StringShape and ArrayShape describe a string of n code points and an
// array of n elements as the marker does.
func StringShape(n int) string { return fmt.Sprintf("a %d-char string", n) }

// ArrayShape: see StringShape.
func ArrayShape(n int) string { return fmt.Sprintf("%d array elements", n) }

// describeShape names the JSON value's shape for the omission marker.
func describeShape(value json.RawMessage) string {
	trimmed := bytes.TrimLeft(value, " \t\r\n")
	if len(trimmed) == 0 {
		return "a value"
	}
	switch trimmed[0] {
	case '[':
		var arr []json.RawMessage
		if json.Unmarshal(value, &arr) == nil {
			return ArrayShape(len(arr))
		}
	case '{':
		if n, ok := countObjectKeys(value); ok {
			return fmt.Sprintf("%d object keys", n)
		}
	case '"':
		var s string
		if json.Unmarshal(value, &s) == nil {
			return StringShape(utf8.RuneCountInString(s))
		}
	}
	return "a value"
}

// countObjectKeys counts the distinct keys of a JSON object without
// decoding its values.
func countObjectKeys(value json.RawMessage) (int, bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(value, &obj); err != nil {
		return 0, false
	}
	return len(obj), true
}

// encodeString renders s as a JSON string without HTML escaping.
func encodeString(s string) json.RawMessage {
	b, _ := jsonx.Marshal(s) // a string always encodes
	return b
}

// Stream kinds named in the stream-cap marker.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// StreamCap applies the stream cap (docs/behaviour.md#output-stream-cap) to one captured stream.
// kind is Stdout or Stderr. A cap of 0, or a stream no longer than the cap,
// is returned unchanged. Otherwise the result is the head (60 % of what the
// marker leaves), the marker, and the tail (40 %), cut on UTF-8 character
// boundaries; when the cap is smaller than the marker only the marker
// remains.
func StreamCap(s string, kind string, limit int) string {
	if limit <= 0 || len(s) <= limit {
		return s
	}
	marker := fmt.Sprintf("\n[…%s truncated: was ~%d KB; middle omitted]\n", kind, len(s)/1024)
	budget := limit - len(marker)
	if budget < 0 {
		budget = 0
	}
	head := budget * 60 / 100
	tail := budget - head

	h := head
	for h > 0 && !utf8.RuneStart(s[h]) {
		h--
	}
	t := len(s) - tail
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return s[:h] + marker + s[t:]
}
