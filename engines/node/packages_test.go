package node

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/code-runner-go/code-runner/engines/node/jsenv"
	"github.com/code-runner-go/code-runner/guidance"
)

// Every built-in package the binary embeds loads with require and import,
// is named by the guidance and by MODULE_NOT_FOUND's text, and nothing else
// is claimed (contract §18, §25.4).
func TestBuiltInPackagesAreWhatTheGuidanceSays(t *testing.T) {
	pkgs := jsenv.Packages()
	want := []string{"lodash", "date-fns", "dayjs", "zod", "yaml", "papaparse", "marked", "decimal.js", "uuid", "ajv", "mathjs", "fast-xml-parser", "diff", "semver"}
	var names []string
	for _, p := range pkgs {
		names = append(names, p.Name)
		if p.Version == "" {
			t.Errorf("%s has no version", p.Name)
		}
	}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("embedded packages %v, contract §25.4 names %v", names, want)
	}
	r, _ := newLoopRig(t, nil)
	list, _ := json.Marshal(names)
	res := mustRun(t, r, node(`const out = {};
for (const name of `+string(list)+`) {
  const viaRequire = require(name);
  const viaImport = await import(name);
  out[name] = [typeof viaRequire, typeof viaImport, Object.keys(viaImport).length > 0];
}
let missing;
try { require("left-pad"); } catch (e) { missing = [e.code, e.message]; }
return { out, missing };`))
	var got struct {
		Out     map[string][]any
		Missing []string
	}
	if err := json.Unmarshal(res.Result, &got); err != nil {
		t.Fatalf("%s %s", res.Result, res.Stderr)
	}
	for _, n := range names {
		v := got.Out[n]
		if len(v) != 3 || v[0] == "undefined" || v[2] != true {
			t.Errorf("%s: %v", n, v)
		}
		if !strings.Contains(guidance.Text, n) {
			t.Errorf("the guidance does not name %s", n)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		if !strings.Contains(string(readme), "`"+p.Name+"` "+p.Version) {
			t.Errorf("the README does not name %s %s", p.Name, p.Version)
		}
	}
	// The console's run card names the same packages (ui/src/run.tsx).
	tsx, err := os.ReadFile("../../ui/src/run.tsx")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tsx), "'"+strings.Join(names, ", ")+"'") {
		t.Error("ui/src/run.tsx's NODE_PACKAGES is not the embedded package list")
	}
	wantMsg := "Cannot find module 'left-pad': code-runner has no network and no npm install; built-in packages: " + strings.Join(names, ", ")
	if len(got.Missing) != 2 || got.Missing[0] != "MODULE_NOT_FOUND" || got.Missing[1] != wantMsg {
		t.Fatalf("%v", got.Missing)
	}
}
