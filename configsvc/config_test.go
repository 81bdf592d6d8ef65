package configsvc

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSchemaPropertiesEqualStructFields(t *testing.T) {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	if len(schema.Properties) != 16 {
		t.Fatalf("schema has %d properties, docs/behaviour.md#configuration-keys lists 16", len(schema.Properties))
	}
	if !reflect.DeepEqual(Keys(), fieldKeys()) {
		t.Fatalf("schema keys %v\n!= Config fields %v (same order expected)", Keys(), fieldKeys())
	}
	var defaults map[string]any
	if err := json.Unmarshal(DefaultsJSON(), &defaults); err != nil {
		t.Fatal(err)
	}
	for k := range schema.Properties {
		if _, ok := defaults[k]; !ok {
			t.Errorf("default for %s missing", k)
		}
	}
}

func TestDefaultsMatchContract(t *testing.T) {
	d := Defaults()
	want := Config{MaxRuntimes: 32, DefaultTimeoutMS: 5000, MaxTimeoutMS: 30000, IdleTTLSecs: 900,
		HeapMB: 128, ExternalMB: 64, ScratchMB: 8, ScratchFiles: 64, ScratchRoot: nil, InjectGuidance: true,
		MaxResultBytes: 32768, MaxStreamBytes: 16384, WarmPoolNode: 2, WarmPoolPython: 2, PythonPath: []string{}, DrainSecs: 8}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("Defaults() = %+v\nwant %+v", d, want)
	}
	if got := string(d.JSON()); got != string(DefaultsJSON()) {
		t.Fatalf("Config.JSON of defaults %s != DefaultsJSON %s", got, DefaultsJSON())
	}
}

func TestFromJSON(t *testing.T) {
	t.Run("null is defaults", func(t *testing.T) {
		c, err := FromJSON([]byte("null"))
		if err != nil || !reflect.DeepEqual(c, Defaults()) {
			t.Fatalf("%+v %v", c, err)
		}
	})
	t.Run("missing keys take defaults", func(t *testing.T) {
		c, err := FromJSON([]byte(`{"max_runtimes": 3, "scratch_root": "/var/tmp"}`))
		if err != nil {
			t.Fatal(err)
		}
		if c.MaxRuntimes != 3 || c.HeapMB != 128 || c.ScratchRootOrEmpty() != "/var/tmp" {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("every problem is reported at once", func(t *testing.T) {
		_, err := FromJSON([]byte(`{"max_runtimes": -1, "heap_mb": "big", "bogus": 1, "warm_pool_node": 17, "inject_guidance": "yes", "other": true}`))
		got := Problems(err)
		want := []string{
			"/bogus: unknown key",
			"/heap_mb: invalid type. Expected: integer, given: string",
			"/inject_guidance: invalid type. Expected: boolean, given: string",
			"/max_runtimes: must be greater than or equal to 0",
			"/other: unknown key",
			"/warm_pool_node: must be less than or equal to 16",
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if !strings.Contains(err.Error(), "/bogus: unknown key; /heap_mb") {
			t.Fatalf("Error() does not join with '; ': %s", err)
		}
	})
	t.Run("not an object", func(t *testing.T) {
		_, err := FromJSON([]byte(`[1]`))
		if got := Problems(err); len(got) != 1 || got[0] != "/: the configuration must be a mapping of keys to values, got a list" {
			t.Fatalf("%v", got)
		}
	})
	t.Run("integer beyond int64", func(t *testing.T) {
		_, err := FromJSON([]byte(`{"max_runtimes": 100000000000000000000000}`))
		if got := Problems(err); len(got) != 1 || got[0] != "/max_runtimes: value out of range for this key" {
			t.Fatalf("%v", got)
		}
	})
}

func env(m map[string]string) LookupEnv {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseYAML(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		env   map[string]string
		check func(Config) bool
		probs []string
	}{
		{name: "flat layout", yaml: "max_runtimes: 4\nheap_mb: 256\n",
			check: func(c Config) bool { return c.MaxRuntimes == 4 && c.HeapMB == 256 && c.ScratchMB == 8 }},
		{name: "fs-adapter layout with value", yaml: "id: code-runner\nname: code-runner\ndescription: x\nvalue:\n  max_result_bytes: 1000\nmetadata: {ui_form: code-runner}\n",
			check: func(c Config) bool { return c.MaxResultBytes == 1000 && c.MaxRuntimes == 32 }},
		{name: "empty file is defaults", yaml: "",
			check: func(c Config) bool { return reflect.DeepEqual(c, Defaults()) }},
		{name: "placeholder with default re-parsed as integer", yaml: "max_runtimes: ${RT:7}\n",
			check: func(c Config) bool { return c.MaxRuntimes == 7 }},
		{name: "placeholder from env", yaml: "max_runtimes: ${RT}\nscratch_root: /data/${WHO}/scratch\n", env: map[string]string{"RT": "9", "WHO": "ops"},
			check: func(c Config) bool { return c.MaxRuntimes == 9 && c.ScratchRootOrEmpty() == "/data/ops/scratch" }},
		{name: "placeholder to boolean", yaml: "inject_guidance: ${GUIDE:false}\n",
			check: func(c Config) bool { return !c.InjectGuidance }},
		{name: "null scratch_root", yaml: "scratch_root: null\n",
			check: func(c Config) bool { return c.ScratchRoot == nil }},
		{name: "unset variable without default and a schema problem together", yaml: "max_runtimes: ${NOPE}\nheap_mb: -5\nbad_key: 1\n",
			probs: []string{
				"/bad_key: unknown key",
				"/heap_mb: must be greater than or equal to 0",
				"/max_runtimes: environment variable NOPE is not set and the placeholder has no default (write ${NOPE:default})",
			}},
		{name: "bad key and bad type in fs layout", yaml: "value:\n  max_runtimes: lots\n  colour: red\n",
			probs: []string{"/colour: unknown key", "/max_runtimes: invalid type. Expected: integer, given: string"}},
		{name: "yaml syntax error", yaml: "max_runtimes: [1,\n",
			probs: []string{"/: not valid YAML: line 1: did not find expected node content"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseYAML([]byte(tc.yaml), env(tc.env))
			if tc.probs != nil {
				if got := Problems(err); !reflect.DeepEqual(got, tc.probs) {
					t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.probs, "\n"))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Fatalf("unexpected config %+v", c)
			}
		})
	}
}

func TestDiffAndDescribe(t *testing.T) {
	old := Defaults()
	nu := old
	nu.MaxResultBytes = 65536
	nu.HeapMB = 256
	nu.WarmPoolPython = 0
	got := Describe("configuration worker", Diff(old, nu), LiveCounts{Node: 3})
	want := "configuration applied (configuration worker): heap_mb 128 → 256 (node runtimes created from now on; 3 live runtimes keep 128); max_result_bytes 32768 → 65536 (next call); warm_pool_python 2 → 0 (pool resizes in the background)"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := Describe("config file", Diff(old, old), LiveCounts{}); got != "configuration refreshed (config file): no changes" {
		t.Fatal(got)
	}
	root := "/srv/scratch"
	nu2 := old
	nu2.ScratchRoot = &root
	nu2.InjectGuidance = false
	nu2.MaxRuntimes = 4
	got = Describe("config file", Diff(old, nu2), LiveCounts{})
	want = `configuration applied (config file): max_runtimes 32 → 4 (immediately; live runtimes are never killed); scratch_root null → "/srv/scratch" (node runtimes created from now on); inject_guidance true → false (next hook call)`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// python_path's shape is checked wherever the configuration comes from;
// whether each entry exists is checked against this host for a
// configuration file (one host's), each bad entry named by its index.
func TestPythonPathEntriesAreChecked(t *testing.T) {
	dir := t.TempDir()
	zipPath := filepath.Join(dir, "libs.zip")
	f, err := os.Create(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	w, _ := zw.Create("mod.py")
	_, _ = w.Write([]byte("x = 1\n"))
	_ = zw.Close()
	_ = f.Close()
	notZip := filepath.Join(dir, "fake.whl")
	_ = os.WriteFile(notZip, []byte("not a zip"), 0o644)
	plain := filepath.Join(dir, "notes.txt")
	_ = os.WriteFile(plain, []byte("x"), 0o644)

	if _, err := FromValue(map[string]any{"python_path": []any{dir, filepath.Join(dir, "missing")}}); err != nil {
		t.Fatalf("a shared configuration was refused for a path this host lacks: %v", err)
	}
	_, err = FromValue(map[string]any{"python_path": []any{dir, "relative/libs", dir + "/../x", "/", dir}})
	got := Problems(err)
	want := []string{"/python_path/1: ", "/python_path/2: ", "/python_path/3: ", "/python_path/4: "}
	if len(got) != len(want) {
		t.Fatalf("problems %q", got)
	}
	for i, frag := range []string{"absolute path", "absolute path", "root directory", "listed twice"} {
		if !strings.HasPrefix(got[i], want[i]) || !strings.Contains(got[i], frag) {
			t.Errorf("problem %q, want %s… %s", got[i], want[i], frag)
		}
	}

	yml := "python_path:\n  - " + dir + "\n  - " + zipPath + "\n"
	if c, err := ParseYAML([]byte(yml), nil); err != nil || len(c.PythonPath) != 2 {
		t.Fatalf("good entries in a file refused: %v", err)
	}
	yml = "python_path:\n  - " + dir + "\n  - " + filepath.Join(dir, "missing") + "\n  - " + notZip + "\n  - " + plain + "\n"
	_, err = ParseYAML([]byte(yml), nil)
	got = Problems(err)
	if len(got) != 3 {
		t.Fatalf("problems %q", got)
	}
	for i, frag := range []string{"does not exist", "not a zip archive", "neither a directory"} {
		if !strings.HasPrefix(got[i], fmt.Sprintf("/python_path/%d: ", i+1)) || !strings.Contains(got[i], frag) {
			t.Errorf("problem %q does not name entry %d and say %q", got[i], i+1, frag)
		}
	}
	if _, err := FromValue(map[string]any{"python_path": "/opt"}); err == nil || !strings.HasPrefix(Problems(err)[0], "/python_path: ") {
		t.Fatalf("a string for the list: %v", err)
	}
}
