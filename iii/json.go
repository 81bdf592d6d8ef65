package iii

import (
	"bytes"
	"encoding/json"
)

// jsonMarshalNoEscape marshals v like json.Marshal but keeps <, > and &
// as they are.
func jsonMarshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
