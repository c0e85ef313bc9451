// The SDK's own tests, run natively: go test (tests/it/lang/go.rs runs them).
package piton

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"piton/internal/box"
)

func TestHintsFollowTheSeedsDefaults(t *testing.T) {
	cases := []struct {
		given []HintOption
		want  Hints
	}{
		{nil, Hints{Destructive: true, OpenWorld: true}},
		{[]HintOption{ReadOnly()}, Hints{ReadOnly: true, Idempotent: true, OpenWorld: true}},
		{[]HintOption{ReadOnly(), OpenWorld(false)}, Hints{ReadOnly: true, Idempotent: true}},
		{[]HintOption{Destructive(false), Idempotent(true)}, Hints{Idempotent: true, OpenWorld: true}},
	}
	for _, c := range cases {
		if got := NewHints(c.given...); got != c.want {
			t.Errorf("NewHints(%v) = %+v, want %+v", c.given, got, c.want)
		}
	}
	var set hintSet
	ReadOnly().hint(&set)
	Idempotent(false).hint(&set)
	if _, err := set.resolve(); err == nil || !strings.Contains(err.Error(), "contradicts Idempotent(false)") {
		t.Errorf("read-only and not idempotent: %v", err)
	}
}

type nested struct {
	// How deep.
	Depth uint `json:"depth"`
}

type embedded struct {
	Shared string `json:"shared"`
}

type schemaArgs struct {
	embedded
	Text    string          `json:"text" description:"From the tag."`
	Count   int             `json:"count,omitempty"`
	Ratio   *float64        `json:"ratio"`
	Tags    []string        `json:"tags,omitzero"`
	Mode    string          `json:"mode" enum:"fast,slow"`
	Pair    [2]int          `json:"pair"`
	Labels  map[string]bool `json:"labels,omitempty"`
	Nested  nested          `json:"nested"`
	When    time.Time       `json:"when,omitempty"`
	Raw     json.RawMessage `json:"raw,omitempty"`
	Bytes   []byte          `json:"bytes,omitempty"`
	Skipped string          `json:"-"`
	hidden  string          //nolint:unused
	Default string
}

func TestSchemasComeFromTypesTagsAndDocs(t *testing.T) {
	Docs(map[string]string{"piton.nested.Depth": "How deep.", "piton.schemaArgs.Text": "From the doc."})
	s, err := (&schemaMaker{docs: docs}).objectSchema(reflect.TypeFor[schemaArgs]())
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(s)
	want := `{"additionalProperties":false,"properties":{` +
		`"Default":{"type":"string"},` +
		`"bytes":{"contentEncoding":"base64","type":"string"},` +
		`"count":{"type":"integer"},` +
		`"labels":{"additionalProperties":{"type":"boolean"},"type":"object"},` +
		`"mode":{"enum":["fast","slow"],"type":"string"},` +
		`"nested":{"additionalProperties":false,"properties":{"depth":{"description":"How deep.","minimum":0,"type":"integer"}},"required":["depth"],"type":"object"},` +
		`"pair":{"items":{"type":"integer"},"maxItems":2,"minItems":2,"type":"array"},` +
		`"ratio":{"type":"number"},` +
		`"raw":{},` +
		`"shared":{"type":"string"},` +
		`"tags":{"items":{"type":"string"},"type":"array"},` +
		`"text":{"description":"From the tag.","type":"string"},` +
		`"when":{"format":"date-time","type":"string"}},` +
		`"required":["shared","text","mode","pair","nested","Default"],"type":"object"}`
	if string(data) != want {
		t.Errorf("schema:\n got %s\nwant %s", data, want)
	}
}

type loop struct {
	Next *loop `json:"next"`
}

func TestTypesWithoutASchemaAreRefused(t *testing.T) {
	for _, c := range []struct {
		typ  reflect.Type
		says string
	}{
		{reflect.TypeFor[string](), "a tool takes a struct"},
		{reflect.TypeFor[loop](), "refers to itself"},
		{reflect.TypeFor[struct {
			C chan int `json:"c"`
		}](), "c: a chan int cannot be a tool's argument"},
		{reflect.TypeFor[struct {
			M map[int]string `json:"m"`
		}](), "m: a map's keys must be strings"},
	} {
		_, err := (&schemaMaker{}).objectSchema(c.typ)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v", c.typ, err)
		}
	}
}

func TestReturnValuesBecomeContentAsTheSeedSays(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n....")
	cases := []struct {
		value any
		want  []box.Block
	}{
		{"hi", []box.Block{{Kind: box.Text, Text: "hi"}}},
		{nil, nil},
		{(*Image)(nil), nil},
		{NewImage(png), []box.Block{{Kind: box.Image, MimeType: "image/png", Data: png}}},
		{[]string{"a", "b"}, []box.Block{{Kind: box.Text, Text: "a"}, {Kind: box.Text, Text: "b"}}},
		{[]any{"page", NewImage(png), 3}, []box.Block{
			{Kind: box.Text, Text: "page"},
			{Kind: box.Image, MimeType: "image/png", Data: png},
			{Kind: box.JSON, Text: "3"},
		}},
		{[]any{1, 2}, []box.Block{{Kind: box.JSON, Text: "[1,2]"}}},
		{map[string]int{"a": 1}, []box.Block{{Kind: box.JSON, Text: `{"a":1}`}}},
		{[]Content{Text("t"), JSON([]int{1})}, []box.Block{{Kind: box.Text, Text: "t"}, {Kind: box.JSON, Text: "[1]"}}},
	}
	for _, c := range cases {
		got, err := toBlocks(c.value)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%#v: got %+v, %v; want %+v", c.value, got, err, c.want)
		}
	}
	for _, bad := range []any{func() {}, map[string]any{"c": make(chan int)}, []Image{NewImage(png)}} {
		if _, err := toBlocks(bad); err == nil {
			t.Errorf("%T became JSON", bad)
		}
	}
}

type callArgs struct {
	Text string `json:"text"`
	N    int    `json:"n,omitempty"`
}

func TestCallDecodesChecksAndSortsErrors(t *testing.T) {
	registered = nil
	defer func() { registered = nil }()
	tool := Register(func(a callArgs) (string, error) {
		switch a.Text {
		case "fail":
			return "", Errorf("failed %d", a.N)
		case "input":
			return "", InputErrorf("bad %d", a.N)
		case "plain":
			return "", errors.New("plain")
		}
		return strings.Repeat(a.Text, a.N), nil
	}, Name("echo"))
	if err := Check(); err != nil {
		t.Fatal(err)
	}
	got, err := tool.Call(`{"text":"ab","n":2}`)
	if err != nil || len(got) != 1 || got[0].String() != "abab" {
		t.Fatalf("%v %v", got, err)
	}
	var input *InputError
	for args, says := range map[string]string{
		`{"n":1}`:                "text: required, but missing",
		`{"text":3}`:             "text: expected a string, not a JSON number",
		`{"text":"a","x":1}`:     `unknown field "x"`,
		`[]`:                     "the arguments must be a JSON object",
		`{"text":"input","n":4}`: "bad 4",
	} {
		_, err := tool.Call(args)
		if !errors.As(err, &input) || !strings.Contains(input.Message, says) {
			t.Errorf("%s: %v, want an input error saying %q", args, err, says)
		}
	}
	var failed *ToolError
	if _, err := tool.Call(`{"text":"fail","n":1}`); !errors.As(err, &failed) || failed.Message != "failed 1" {
		t.Errorf("fail: %v", err)
	}
	var stop *StopError
	if _, err := tool.Call(`{"text":"plain"}`); !errors.As(err, &stop) || !strings.Contains(stop.Error(), "piton.Fail(err)") {
		t.Errorf("plain: %v", err)
	}
}

func WordCount(callArgs) (int, error) { return 0, nil }

func TestNamesComeFromTheFunctionAndMistakesAreFound(t *testing.T) {
	registered = nil
	defer func() { registered = nil }()
	if err := Check(); err == nil || !strings.Contains(err.Error(), "registers no tool") {
		t.Errorf("no tools: %v", err)
	}
	if got := Register(WordCount).Name(); got != "word_count" {
		t.Errorf("WordCount is called %q", got)
	}
	for name, want := range map[string]string{"main.HTTPFetch": "http_fetch", "main.ReadURL2": "read_url2", "main.init.func1": ""} {
		if got := snakeCase(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	Register(WordCount)
	if err := Check(); err == nil || !strings.Contains(err.Error(), "two tools named word_count") {
		t.Errorf("two of a name: %v", err)
	}
	registered = nil
	Register(func(callArgs) (int, error) { return 0, nil })
	if err := Check(); err == nil || !strings.Contains(err.Error(), `give piton.Name("...")`) {
		t.Errorf("a function literal without a name: %v", err)
	}
	registered = nil
	Register(WordCount, ReadOnly(), Destructive(true))
	if err := Check(); err == nil || !strings.Contains(err.Error(), "contradicts Destructive(true)") {
		t.Errorf("contradicting hints: %v", err)
	}
}

func TestHintsForSeesParsedArgumentsAndMayBeUnsure(t *testing.T) {
	registered = nil
	defer func() { registered = nil }()
	tool := Register(WordCount, HintsFor(func(args map[string]any) *Hints {
		if args["text"] == "" {
			h := NewHints(ReadOnly())
			return &h
		}
		return nil
	}))
	if h := tool.HintsForArgs(`{"text":""}`); !h.ReadOnly {
		t.Errorf("narrowed: %+v", h)
	}
	for _, args := range []string{`{"text":"x"}`, `not json`, `[1]`} {
		if h := tool.HintsForArgs(args); h != tool.Hints() {
			t.Errorf("%s: %+v", args, h)
		}
	}
}
