package python

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/guidance"
)

// bundled is every library of the package bundle (deps/pypkgs/build.sh)
// exercised the way an agent would use it, with the answer CPython gives.
var bundled = []struct{ name, code, want string }{
	{"sympy + mpmath", `import sympy
x = sympy.Symbol('x')
result = [str(sympy.solve(x**2 - 5*x + 6, x)), str(sympy.factorint(2**4 * 3**2 * 101)), str(sympy.integrate(sympy.sin(x)**2, (x, 0, sympy.pi))), str(sympy.N(sympy.pi, 20))]`,
		`["[2, 3]","{2: 4, 3: 2, 101: 1}","pi/2","3.1415926535897932385"]`},
	{"networkx", `import networkx as nx
G = nx.Graph()
G.add_weighted_edges_from([('a', 'b', 1), ('b', 'c', 2), ('a', 'c', 5), ('c', 'd', 1)])
result = [nx.shortest_path(G, 'a', 'd', weight='weight'), nx.shortest_path_length(G, 'a', 'd', weight='weight'), sorted(sorted(c) for c in nx.connected_components(nx.Graph([(1, 2), (3, 4)])))]`,
		`[["a","b","c","d"],4,[[1,2],[3,4]]]`},
	{"dateutil", `import dateutil.parser, dateutil.relativedelta, datetime
d = dateutil.parser.parse('March 3, 2024 4:05 PM')
result = [d.isoformat(), (datetime.date(2024, 1, 31) + dateutil.relativedelta.relativedelta(months=1)).isoformat()]`,
		`["2024-03-03T16:05:00","2024-02-29"]`},
	{"zoneinfo across a DST change", `import zoneinfo, datetime
ny = zoneinfo.ZoneInfo('America/New_York')
before = datetime.datetime(2024, 3, 10, 6, 30, tzinfo=datetime.timezone.utc)
result = [str(before.astimezone(ny)), str((before + datetime.timedelta(hours=1)).astimezone(ny)), str(datetime.datetime(2024, 7, 1, 12, tzinfo=zoneinfo.ZoneInfo('Europe/Paris')).utcoffset())]`,
		`["2024-03-10 01:30:00-05:00","2024-03-10 03:30:00-04:00","2:00:00"]`},
	{"pytz", `import pytz, datetime
tz = pytz.timezone('Europe/Paris')
result = str(tz.localize(datetime.datetime(2024, 1, 15, 12)).utcoffset())`,
		`"1:00:00"`},
	{"yaml, pure path", `import yaml
result = [yaml.__with_libyaml__, yaml.safe_load('a: [1, 2]\nb: {c: true}'), yaml.safe_dump({'k': [1, 'two']}, sort_keys=True)]`,
		`[false,{"a":[1,2],"b":{"c":true}},"k:\n- 1\n- two\n"]`},
	{"jinja2 with autoescape, markupsafe's pure path", `import jinja2, markupsafe
env = jinja2.Environment(autoescape=True)
result = [env.from_string('<p>{{ x }}</p>{% for i in items %}[{{ i }}]{% endfor %}').render(x='<b>&', items=[1, 2]), markupsafe.escape.__module__]`,
		`["<p>&lt;b&gt;&amp;</p>[1][2]","markupsafe._native"]`},
	{"bs4 + soupsieve", `import bs4
soup = bs4.BeautifulSoup('<ul><li class="a">one</li><li>two</li><li class="a">three</li></ul>', 'html.parser')
result = [li.text for li in soup.select('li.a')]`,
		`["one","three"]`},
	{"markdown", `import markdown
result = markdown.markdown('# T\n\n|a|b|\n|-|-|\n|1|2|', extensions=['tables']).count('<td>')`,
		`2`},
	{"chardet", `import chardet
result = chardet.detect('Größe und Übermaß'.encode('utf-8'))['encoding']`,
		`"utf-8"`},
	{"idna", `import idna
result = idna.encode('bücher.example').decode()`,
		`"xn--bcher-kva.example"`},
	{"packaging", `from packaging.version import Version
from packaging.specifiers import SpecifierSet
result = [Version('1.10') > Version('1.9'), '2.1' in SpecifierSet('>=2,<3')]`,
		`[true,true]`},
	{"attrs", `import attr
@attr.s(frozen=True)
class P:
    x = attr.ib(validator=attr.validators.instance_of(int))
try:
    P('no')
    result = 'accepted'
except TypeError:
    result = [P(1).x, 'refused']`,
		`[1,"refused"]`},
	{"more_itertools + toolz", `import more_itertools, toolz
result = [list(more_itertools.chunked(range(5), 2)), toolz.frequencies('abca')]`,
		`[[[0,1],[2,3],[4]],{"a":2,"b":1,"c":1}]`},
	{"tabulate + six", `import tabulate, six
result = [tabulate.tabulate([['a', 1]], headers=['k', 'v'], tablefmt='github'), six.PY3]`,
		`["| k   |   v |\n|-----|-----|\n| a   |   1 |",true]`},
	{"pydantic v1, pure", `import pydantic
class M(pydantic.BaseModel):
    n: int
    tags: list[str] = []
try:
    M(n='x')
    result = 'accepted'
except pydantic.ValidationError as e:
    result = [e.errors()[0]['loc'], M(n='3').n, pydantic.compiled, pydantic.VERSION[:1]]`,
		`[["n"],3,false,"1"]`},
	{"jsonschema", `import jsonschema
s = {'type': 'object', 'properties': {'n': {'type': 'integer'}}, 'required': ['n']}
jsonschema.validate({'n': 1}, s)
try:
    jsonschema.validate({'n': 'x'}, s)
except jsonschema.ValidationError as e:
    result = e.message`,
		`"'x' is not of type 'integer'"`},
	// The documents agents are handed, and more batteries (issue 48): each
	// answer is what /usr/bin/python3 (3.11) gives running the same code over
	// the same files of the bundle.
	{"xlsx: xlsxwriter writes, openpyxl reads (formulas, dates, sheets)",
		"import datetime, io, xlsxwriter, openpyxl\nbuf = io.BytesIO()\nwb = xlsxwriter.Workbook(buf, {'in_memory': True})\nws = wb.add_worksheet('Sales')\ndate_fmt = wb.add_format({'num_format': 'yyyy-mm-dd'})\nws.write_row(0, 0, ['item', 'qty', 'price', 'when'])\nrows = [('apple', 3, 0.5, datetime.date(2024, 1, 2)), ('pear', 5, 0.75, datetime.date(2024, 2, 29))]\nfor i, (name, q, p, d) in enumerate(rows, start=1):\n    ws.write(i, 0, name); ws.write(i, 1, q); ws.write(i, 2, p); ws.write_datetime(i, 3, datetime.datetime.combine(d, datetime.time()), date_fmt)\nws.write_formula(3, 1, '=SUM(B2:B3)')\nnotes = wb.add_worksheet('Notes')\nnotes.write(0, 0, 'zürich ✓')\nwb.close()\nwith open('/work/book.xlsx', 'wb') as f:\n    f.write(buf.getvalue())\nbook = openpyxl.load_workbook('/work/book.xlsx')\ns = book['Sales']\nresult = [book.sheetnames, [c.value for c in s[1]], s['A3'].value, s['B4'].value, s['D3'].value.isoformat(), s.max_row, book['Notes']['A1'].value]",
		"[[\"Sales\",\"Notes\"],[\"item\",\"qty\",\"price\",\"when\"],\"pear\",\"=SUM(B2:B3)\",\"2024-02-29T00:00:00\",4,\"zürich ✓\"]"},
	{"xlsx: openpyxl writes and reads back (merged cells, dates)",
		"import openpyxl, datetime\nwb = openpyxl.Workbook()\nws = wb.active\nws.title = 'T'\nws.append(['n', 'sq'])\nfor n in range(1, 4):\n    ws.append([n, n * n])\nws['C1'] = datetime.datetime(2024, 5, 6, 7, 8)\nws.merge_cells('A6:B6')\nwb.create_sheet('Other').append(['x'])\nwb.save('/work/o.xlsx')\nrb = openpyxl.load_workbook('/work/o.xlsx')\nt = rb['T']\nresult = [rb.sheetnames, [[c.value for c in r] for r in t.iter_rows(min_row=1, max_row=4, max_col=2)], t['C1'].value.isoformat(), [str(m) for m in t.merged_cells.ranges]]",
		"[[\"T\",\"Other\"],[[\"n\",\"sq\"],[1,1],[2,4],[3,9]],\"2024-05-06T07:08:00\",[\"A6:B6\"]]"},
	{"pdf: pypdf writes pages, text and metadata, and reads them",
		"import io\nfrom pypdf import PdfWriter, PdfReader\nfrom pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject\nw = PdfWriter()\nfor text in ('Hello page one', 'Second page here'):\n    page = w.add_blank_page(width=300, height=200)\n    font = DictionaryObject({NameObject('/Type'): NameObject('/Font'), NameObject('/Subtype'): NameObject('/Type1'), NameObject('/BaseFont'): NameObject('/Helvetica')})\n    page[NameObject('/Resources')] = DictionaryObject({NameObject('/Font'): DictionaryObject({NameObject('/F1'): w._add_object(font)})})\n    stream = DecodedStreamObject()\n    stream.set_data(('BT /F1 12 Tf 20 100 Td (%s) Tj ET' % text).encode())\n    page[NameObject('/Contents')] = w._add_object(stream)\nw.add_metadata({'/Title': 'Report', '/Author': 'agent'})\nbuf = io.BytesIO(); w.write(buf)\nr = PdfReader(io.BytesIO(buf.getvalue()))\nresult = [len(r.pages), [p.extract_text() for p in r.pages], r.metadata.title, r.metadata.author, float(r.pages[0].mediabox.width)]",
		"[2,[\"Hello page one\",\"Second page here\"],\"Report\",\"agent\",300.0]"},
	{"rich: a table exported as text",
		"from rich.console import Console\nfrom rich.table import Table\nc = Console(record=True, width=40, color_system=None, force_terminal=False)\nt = Table(title='Scores')\nt.add_column('name'); t.add_column('points', justify='right')\nt.add_row('ada', '3'); t.add_row('bob', '12')\nc.print(t)\nc.print('[bold]done[/bold]')\nresult = c.export_text()",
		"\"     Scores      \\n┏━━━━━━┳━━━━━━━━┓\\n┃ name ┃ points ┃\\n┡━━━━━━╇━━━━━━━━┩\\n│ ada  │      3 │\\n│ bob  │     12 │\\n└──────┴────────┘\\ndone\\n\""},
	{"lark: a grammar parses and transforms",
		"from lark import Lark, Transformer\ng = Lark(r\"\"\"\n?expr: expr \"+\" term -> add | term\n?term: term \"*\" atom -> mul | atom\n?atom: NUMBER -> num | \"(\" expr \")\"\n%import common.NUMBER\n%import common.WS\n%ignore WS\n\"\"\", start='expr')\nclass Calc(Transformer):\n    def add(self, a): return a[0] + a[1]\n    def mul(self, a): return a[0] * a[1]\n    def num(self, a): return int(a[0])\ntree = g.parse('2 * (3 + 4) + 1')\nresult = [Calc().transform(tree), tree.data]",
		"[15,\"add\"]"},
	{"tomlkit: a round trip keeps comments",
		"import tomlkit\nsrc = '# settings\\n[server]\\nport = 8080  # the port\\nhosts = [\"a\", \"b\"]\\n'\ndoc = tomlkit.parse(src)\ndoc['server']['port'] = 9090\ndoc['server']['hosts'].append('c')\nresult = [tomlkit.dumps(doc), doc['server']['port']]",
		"[\"# settings\\n[server]\\nport = 9090  # the port\\nhosts = [\\\"a\\\", \\\"b\\\", \\\"c\\\"]\\n\",9090]"},
	{"pyparsing, sortedcontainers, jmespath, humanize, unidecode, cachetools, isodate, xmltodict",
		"import pyparsing as pp, sortedcontainers, jmespath, humanize, unidecode, cachetools, isodate, xmltodict, datetime\nword = pp.Word(pp.alphas) + pp.Suppress('=') + pp.Word(pp.nums)\nsl = sortedcontainers.SortedList([5, 1, 4]); sl.add(3)\ncache = cachetools.LRUCache(maxsize=2); cache['a'] = 1; cache['b'] = 2; cache['c'] = 3\nresult = [word.parse_string('x = 42').as_list(), list(sl), sl.bisect_left(4),\n  jmespath.search('people[?age > `30`].name', {'people': [{'name': 'a', 'age': 25}, {'name': 'b', 'age': 40}]}),\n  humanize.intcomma(1234567), humanize.naturalsize(1048576), unidecode.unidecode('Straße Ærø 北京'), sorted(cache.keys()),\n  str(isodate.parse_duration('P1DT2H')), isodate.parse_datetime('2024-03-04T05:06:07Z').isoformat(),\n  xmltodict.parse('<r><a x=\"1\">t</a><a>u</a></r>'), xmltodict.unparse({'r': {'b': '1'}}, full_document=False)]",
		"[[\"x\",\"42\"],[1,3,4,5],2,[\"b\"],\"1,234,567\",\"1.0 MB\",\"Strasse AEro Bei Jing \",[\"b\",\"c\"],\"1 day, 2:00:00\",\"2024-03-04T05:06:07+00:00\",{\"r\":{\"a\":[{\"@x\":\"1\",\"#text\":\"t\"},\"u\"]}},\"<r><b>1</b></r>\"]"},
	{"rich + pygments + markdown-it render markdown to text",
		"from rich.console import Console\nfrom rich.markdown import Markdown\nfrom rich.syntax import Syntax\nimport markdown_it\nc = Console(record=True, width=40, color_system=None)\nc.print(Markdown('# Title\\n\\n* one\\n* two'))\nc.print(Syntax('x = 1', 'python'))\nresult = [c.export_text(), markdown_it.MarkdownIt().render('**b**')]",
		"[\"┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓\\n┃                Title                 ┃\\n┗━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┛\\n\\n • one                                  \\n • two                                  \\nx = 1                                   \\n\",\"<p><strong>b</strong></p>\\n\"]"},
}

// Every bundled library imports and works in a one-shot, whose interpreter
// had imported none of them (nothing is imported until a guest imports
// it), and in a kept runtime, turn after turn.
func TestBundledLibrariesWork(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	res := r.mustRun(t, `import sys
result = sorted(m for m in ('sympy', 'networkx', 'yaml', 'jinja2', 'pydantic', 'bs4') if m in sys.modules)`)
	if string(res.Result) != `[]` {
		t.Fatalf("a fresh interpreter has bundled libraries imported already: %s", res.Result)
	}
	k, err := r.run(t, map[string]any{"keep": true, "code": "n = 0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range bundled {
		t.Run(tc.name, func(t *testing.T) {
			for _, req := range []map[string]any{
				{"code": tc.code, "timeout_ms": 60000},
				{"runtime_id": k.RuntimeID, "code": tc.code, "timeout_ms": 60000},
			} {
				res, err := r.run(t, req)
				if err != nil || !res.Success || string(res.Result) != tc.want {
					t.Fatalf("kept %v: %s (want %s) %v\n%s", req["runtime_id"] != nil, res.Result, tc.want, err, res.Stderr)
				}
			}
		})
	}
}

// The bundle is read-only and link-proof: a guest cannot write, create,
// remove or link into any of its trees, and cannot reach past them.
func TestTheBundleIsReadOnly(t *testing.T) {
	r := newRig(t, nil)
	res := r.mustRun(t, `import os
out = []
for op in (lambda: open('/usr/local/lib/python3.11/site-packages/yaml/__init__.py', 'a'),
           lambda: open('/usr/local/lib/python3.11/site-packages/evil.py', 'w'),
           lambda: os.remove('/usr/local/lib/python3.11/site-packages/six.py'),
           lambda: os.mkdir('/usr/share/zoneinfo/Evil'),
           lambda: open('/usr/share/zoneinfo/UTC', 'r+b'),
           lambda: os.symlink('/work', '/usr/local/lib/python3.11/site-packages/link'),
           lambda: os.rename('/usr/share/doc/python3-six', '/work/x'),
           lambda: open('/usr/local/lib/python3.11/site-packages/../../../../../etc/passwd')):
    try:
        op()
        out.append('allowed')
    except OSError as e:
        out.append(type(e).__name__)
import six
result = [out, os.path.exists('/usr/local/lib/python3.11/site-packages/evil.py'), six.__file__, 'Copyright' in open('/usr/share/doc/python3-sympy/copyright').read()]`)
	if strings.Contains(string(res.Result), "allowed") || !strings.Contains(string(res.Result), `false,"/usr/local/lib/python3.11/site-packages/six.py",true]`) {
		t.Fatalf("%s %s", res.Result, res.Stderr)
	}
}

// A heavy library computation is still bounded: sympy factoring a large
// semiprime ends at the turn's deadline, a networkx graph too large for the
// memory cap ends as a memory kill, and the runtime serves on (or is
// replaced) with a correct answer.
func TestHeavyLibraryWorkEndsAtItsLimits(t *testing.T) {
	r := newRig(t, nil)
	res, err := r.run(t, map[string]any{"timeout_ms": 1500, "code": `import sympy
result = sympy.factorint((2**89 - 1) * (2**107 - 1))`})
	if err == nil || err.Code != core.CodeTimeout {
		t.Fatalf("factoring a 196-bit semiprime: %+v %v; want a timeout", res, err)
	}
	res, err = r.run(t, map[string]any{"timeout_ms": 60000, "memory_mb": 64, "code": `import networkx as nx
G = nx.complete_graph(4000)
result = G.number_of_edges()`})
	if err == nil && res.Success {
		t.Fatalf("a 4000-node complete graph fit in 64 MiB: %s", res.Result)
	}
	if err != nil && err.Code == core.CodeTimeout {
		t.Fatalf("a graph past the memory cap ran to its deadline: %v", err)
	}
	// The document libraries: a workbook too big for the deadline, a
	// table too big for the memory cap.
	for _, tc := range []struct {
		code string
		req  map[string]any
		want core.Code
	}{
		{"import openpyxl\nwb = openpyxl.Workbook()\nws = wb.active\nfor i in range(10**7):\n    ws.append([i, i * 2, str(i)])", map[string]any{"timeout_ms": 1500}, core.CodeTimeout},
		{"from rich.table import Table\nt = Table()\nt.add_column('x')\nfor i in range(10**8):\n    t.add_row('x' * 100)", map[string]any{"timeout_ms": 60000, "memory_mb": 64}, core.CodeResourceExhausted},
		{"import io\nfrom pypdf import PdfWriter\nw = PdfWriter()\nwhile True:\n    w.add_blank_page(width=100, height=100)", map[string]any{"timeout_ms": 1500}, core.CodeTimeout},
	} {
		tc.req["code"] = tc.code
		res, err := r.run(t, tc.req)
		if err == nil || (err.Code != tc.want && !(tc.want == core.CodeResourceExhausted && err.Code == core.CodeTimeout)) {
			t.Fatalf("%q: %+v %v, want %s", tc.code, res, err, tc.want)
		}
	}
	if res := r.mustRun(t, "import sympy\nresult = str(sympy.factorint(91))"); string(res.Result) != `"{7: 1, 13: 1}"` {
		t.Fatalf("after the heavy turns: %s %s", res.Result, res.Stderr)
	}
}

// What the guidance tells agents they can import, they can: every library
// it names imports in the sandbox, and numpy, which it says is absent, is.
func TestTheGuidanceNamesWhatIsThere(t *testing.T) {
	_, rest, ok := strings.Cut(guidance.Text, "it can import ")
	list, _, ok2 := strings.Cut(rest, " — but")
	if !ok || !ok2 {
		t.Fatal("the guidance no longer lists python's libraries as \"it can import … — but\"")
	}
	// The console's run card names the same libraries (ui/src/run.tsx).
	tsx, err := os.ReadFile("../../ui/src/run.tsx")
	if err != nil {
		t.Fatal(err)
	}
	if want := "'" + strings.ReplaceAll(list, " and ", ", ") + "'"; !strings.Contains(string(tsx), want) {
		t.Fatalf("ui/src/run.tsx's PYTHON_LIBRARIES is not the guidance's list %s", want)
	}
	var names []string
	for _, n := range strings.Split(strings.ReplaceAll(list, " and ", ", "), ", ") {
		names = append(names, "'"+strings.TrimSpace(n)+"'")
	}
	// Importing every library at once (sympy, networkx, openpyxl, rich, …)
	// takes seconds under the race detector: a deadline of its own.
	r := newRig(t, func(c *configsvc.Config) { c.DefaultTimeoutMS = 30000 })
	res := r.mustRun(t, `import importlib
out = {}
for m in [`+strings.Join(names, ", ")+`, 'numpy']:
    try:
        importlib.import_module(m)
        out[m] = True
    except ImportError:
        out[m] = False
result = out`)
	var got map[string]bool
	if err := json.Unmarshal(res.Result, &got); err != nil || len(got) != len(names)+1 {
		t.Fatalf("%s %s", res.Result, res.Stderr)
	}
	for m, ok := range got {
		if ok == (m == "numpy") {
			t.Errorf("import %s: %v", m, ok)
		}
	}
}
