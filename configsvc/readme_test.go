package configsvc

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeConfigTableMatchesSchema keeps the README's configuration table
// true: exactly the schema's keys, in schema order, with the schema's defaults.
func TestReadmeConfigTableMatchesSchema(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "<!-- config-table:begin -->")
	end := strings.Index(text, "<!-- config-table:end -->")
	if start < 0 || end < start {
		t.Fatal("README lacks the config-table markers")
	}
	row := regexp.MustCompile("^\\| `([a-z_]+)` \\| [^|]+ \\| `([^`]+)` \\|")
	var keys []string
	defaults := map[string]string{}
	for _, line := range strings.Split(text[start:end], "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			keys = append(keys, m[1])
			defaults[m[1]] = m[2]
		}
	}
	if strings.Join(keys, ",") != strings.Join(Keys(), ",") {
		t.Fatalf("README keys %v\n!= schema keys %v", keys, Keys())
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(DefaultsJSON(), &want); err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if defaults[k] != string(v) {
			t.Errorf("README default of %s is %s, schema says %s", k, defaults[k], v)
		}
	}
}
