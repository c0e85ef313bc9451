// Package piton writes agent tools in Go for piton: a tool is a function of a typed
// input struct, and `piton build` makes the module one sandboxed WebAssembly
// component (a toolbox: every registered tool is its own entry).
//
//	package main
//
//	import (
//		"strings"
//
//		"piton"
//	)
//
//	// WordCountArgs are word_count's arguments.
//	type WordCountArgs struct {
//		// The text to count the words of.
//		Text string `json:"text"`
//	}
//
//	// Count the words in a text.
//	func WordCount(args WordCountArgs) (int, error) {
//		return len(strings.Fields(args.Text)), nil
//	}
//
//	func init() {
//		piton.Register(WordCount, piton.ReadOnly(), piton.OpenWorld(false))
//	}
//
//	func main() {}
//
// The model follows piton's Tools API: the name defaults to the function's in
// snake_case, the description is its doc comment, the input struct's fields (by their
// json tags) are the arguments and their doc comments describe them; a hint left out
// assumes the worst; a returned string is text, nil is "(done)", an [Image] an image,
// anything else JSON; a [ToolError] or [InputError] is a result the model handles,
// and any other error, like a panic, stops the run. See README.md beside this file.
package piton

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"unicode"

	"piton/internal/box"
)

// Contract is the version of the piton:tool contract this SDK implements.
const Contract = "piton:tool@0.1.2"

// validName is whether name matches [A-Za-z0-9_-]{1,64} (without package regexp,
// whose compile every instance would pay for at its start).
func validName(name string) bool {
	if len(name) < 1 || len(name) > 64 {
		return false
	}
	for _, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// Tool is one registered tool. Its methods are what piton reads and runs; a test
// calls them directly.
type Tool struct {
	name        string
	description string
	parallel    bool
	hints       Hints
	hintsFor    func(args map[string]any) *Hints
	input       reflect.Type
	schema      map[string]any
	fnName      string
	call        func(args any) (any, error)
	schemaText  string
	err         error
}

// Option is an option of [Register]: Name, Description, Sequential, HintsFor, or a
// hint (ReadOnly(), Destructive(b), Idempotent(b), OpenWorld(b)).
type Option interface {
	apply(*config)
}

type config struct {
	name, description string
	sequential        bool
	hints             hintSet
	hintsFor          func(args map[string]any) *Hints
	schema            map[string]any
}

type option func(*config)

func (o option) apply(c *config) { o(c) }

// Name is the name the model calls, [A-Za-z0-9_-]{1,64}; by default the function's
// name in snake_case (WordCount: word_count).
func Name(name string) Option { return option(func(c *config) { c.name = name }) }

// Description is what the model reads about the tool; by default the function's doc
// comment.
func Description(text string) Option {
	return option(func(c *config) { c.description = text })
}

// Sequential makes the host run the tool alone, after a batch's other calls.
func Sequential() Option { return option(func(c *config) { c.sequential = true }) }

// HintsFor gives a function that tells what one call does: it gets the call's
// arguments, parsed from JSON but not yet checked against the schema (read them with
// care), and returns the call's hints, or nil when unsure (the tool's own hints then
// apply). The host never lets an answer widen the tool's own hints.
func HintsFor(f func(args map[string]any) *Hints) Option {
	return option(func(c *config) { c.hintsFor = f })
}

// InputSchema replaces the schema derived from the input type with schema (an object
// schema, such as one read from a file). The arguments are still decoded into the
// input type.
func InputSchema(schema map[string]any) Option {
	return option(func(c *config) { c.schema = schema })
}

var registered []*Tool

// Register makes fn a tool of this module's component and returns it. fn takes the
// input struct (the model's arguments, decoded as encoding/json does) and returns the
// result and an error. Call it from an init function (or a package-level var), so the
// component declares its tools when it starts. A mistake in the tool (a bad name,
// hints that contradict each other, an input type without a JSON schema) is reported
// when piton loads the component, which then does not load, and by [Check].
func Register[In any, Out any](fn func(In) (Out, error), options ...Option) *Tool {
	var c config
	for _, o := range options {
		o.apply(&c)
	}
	t := &Tool{
		description: c.description,
		parallel:    !c.sequential,
		hintsFor:    c.hintsFor,
		input:       reflect.TypeFor[In](),
		schema:      c.schema,
		call: func(args any) (any, error) {
			return fn(args.(In))
		},
	}
	if fn == nil {
		t.err = errors.New("piton.Register takes a function, not nil")
	} else {
		t.fnName = runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	}
	t.name = c.name
	if t.name == "" && t.err == nil {
		t.name = snakeCase(t.fnName)
	}
	hints, err := c.hints.resolve()
	t.hints = hints
	if t.err == nil && err != nil {
		t.err = err
	}
	if t.err == nil && !validName(t.name) {
		t.err = fmt.Errorf("a tool's name must match [A-Za-z0-9_-]{1,64}, not %q (give piton.Name(\"...\"))", t.name)
	}
	registered = append(registered, t)
	return t
}

// snakeCase is the tool name of a function: main.WordCount → word_count. A function
// literal (main.init.func1) has no name to give.
func snakeCase(fnName string) string {
	name := fnName[strings.LastIndex(fnName, ".")+1:]
	if strings.HasPrefix(name, "func") || strings.Contains(fnName, ".init.") {
		return ""
	}
	var b strings.Builder
	runes := []rune(name)
	for i, r := range runes {
		if unicode.IsUpper(r) {
			nextLower := i+1 < len(runes) && unicode.IsLower(runes[i+1])
			if i > 0 && (unicode.IsLower(runes[i-1]) || unicode.IsDigit(runes[i-1]) || nextLower) {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Name is the name the model calls.
func (t *Tool) Name() string { return t.name }

// Description is what the model reads: the Description option, else the function's
// doc comment as piton build collected it.
func (t *Tool) Description() string {
	if t.description != "" {
		return t.description
	}
	return docs[t.fnName]
}

// Hints are the tool's own hints: the worst case for any call.
func (t *Tool) Hints() Hints { return t.hints }

// Parallel is false for a tool made with Sequential.
func (t *Tool) Parallel() bool { return t.parallel }

// InputSchema is the JSON Schema of the arguments, as the model sees it.
func (t *Tool) InputSchema() (map[string]any, error) {
	if t.schema != nil {
		if t.schema["type"] != "object" {
			return nil, fmt.Errorf("tool %s: InputSchema must be an object schema ({\"type\": \"object\", ...})", t.name)
		}
		return t.schema, nil
	}
	s, err := (&schemaMaker{docs: docs}).objectSchema(t.input)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", t.name, err)
	}
	return s, nil
}

// HintsForArgs is the hints of one call with the JSON arguments args: what the
// HintsFor function returns, or the tool's own hints when it returns nil, was not
// given, or the arguments are not a JSON object.
func (t *Tool) HintsForArgs(args string) Hints {
	if h, ok := t.callHints(args); ok {
		return h
	}
	return t.hints
}

func (t *Tool) callHints(args string) (Hints, bool) {
	if t.hintsFor == nil {
		return Hints{}, false
	}
	var parsed map[string]any
	if json.Unmarshal([]byte(args), &parsed) != nil || parsed == nil {
		return Hints{}, false
	}
	h := t.hintsFor(parsed)
	if h == nil {
		return Hints{}, false
	}
	return *h, true
}

// Call runs the tool with the JSON arguments args as piton does: it decodes them into
// the input struct (an [InputError] when they do not fit, or a required argument is
// missing), calls the function and turns its result into content blocks. A returned
// ToolError or InputError is returned as it is; any other error is returned wrapped
// in a *StopError, which in the component stops the run.
func (t *Tool) Call(args string) ([]Content, error) {
	blocks, failure, err := t.run(args)
	if err != nil {
		return nil, err
	}
	if failure != nil {
		if failure.Input {
			return nil, &InputError{Message: failure.Message}
		}
		return nil, &ToolError{Message: failure.Message}
	}
	out := make([]Content, len(blocks))
	for i, b := range blocks {
		switch b.Kind {
		case box.Text:
			out[i] = Text(b.Text)
		case box.JSON:
			out[i] = Content{kind: box.JSON, text: b.Text, value: json.RawMessage(b.Text)}
		default:
			out[i] = ImageContent(Image{MimeType: b.MimeType, Data: b.Data})
		}
	}
	return out, nil
}

// StopError is an error a tool returned that is neither a [ToolError] nor an
// [InputError]: like a panic, it stops the run.
type StopError struct {
	Tool string
	Err  error
}

func (e *StopError) Error() string {
	return fmt.Sprintf("tool %s returned an error that is not a piton.ToolError or piton.InputError, which stops the run "+
		"(return piton.Fail(err) for a failure the model should see): %v", e.Tool, e.Err)
}

func (e *StopError) Unwrap() error { return e.Err }

// run decodes args, calls the function and converts its result.
func (t *Tool) run(args string) ([]box.Block, *box.Failure, error) {
	in, problem := t.decode(args)
	if problem != "" {
		return nil, &box.Failure{Input: true, Message: problem}, nil
	}
	out, err := t.call(in)
	if err != nil {
		var input *InputError
		var failed *ToolError
		switch {
		case errors.As(err, &input):
			return nil, &box.Failure{Input: true, Message: input.Message}, nil
		case errors.As(err, &failed):
			return nil, &box.Failure{Message: failed.Message}, nil
		}
		return nil, nil, &StopError{Tool: t.name, Err: err}
	}
	blocks, err := toBlocks(out)
	if err != nil {
		return nil, nil, fmt.Errorf("tool %s: %w", t.name, err)
	}
	return blocks, nil, nil
}

// decode is the arguments as the input type, or what is wrong with them.
func (t *Tool) decode(args string) (any, string) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &fields); err != nil || fields == nil {
		return nil, "the arguments must be a JSON object"
	}
	if t.schema == nil {
		s, err := t.InputSchema()
		if err == nil {
			if required, ok := s["required"].([]string); ok {
				for _, name := range required {
					if _, ok := fields[name]; !ok {
						return nil, name + ": required, but missing"
					}
				}
			}
		}
	}
	value := reflect.New(t.input)
	decoder := json.NewDecoder(bytes.NewReader([]byte(args)))
	if t.schema == nil {
		decoder.DisallowUnknownFields()
	}
	if err := decoder.Decode(value.Interface()); err != nil {
		return nil, inputProblem(err)
	}
	return value.Elem().Interface(), ""
}

// inputProblem says what encoding/json found wrong, naming the argument.
func inputProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return fmt.Sprintf("%s: expected %s, not a JSON %s", typeErr.Field, kindName(typeErr.Type), typeErr.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// Tools are the registered tools, in the order of their names.
func Tools() []*Tool {
	tools := append([]*Tool(nil), registered...)
	sort.SliceStable(tools, func(i, j int) bool { return tools[i].name < tools[j].name })
	return tools
}

// Lookup is the registered tool called name, or nil.
func Lookup(name string) *Tool {
	for _, t := range registered {
		if t.name == name {
			return t
		}
	}
	return nil
}

// Check says what is wrong with the registered tools, as piton does when it loads the
// component: no tools, two of one name, a bad name, contradicting hints, an input
// type without a schema. A module's test calls it.
func Check() error {
	if len(registered) == 0 {
		return errors.New("this module registers no tool: call piton.Register(fn) from an init function")
	}
	seen := map[string]string{}
	for _, t := range registered {
		if t.err != nil {
			return fmt.Errorf("tool %s (%s): %w", t.name, t.fnName, t.err)
		}
		if other, ok := seen[t.name]; ok {
			return fmt.Errorf("%s and %s are two tools named %s: give one piton.Name(\"...\")", other, t.fnName, t.name)
		}
		seen[t.name] = t.fnName
		if _, err := t.spec(); err != nil {
			return err
		}
	}
	return nil
}

// spec is the schema's JSON text, made once.
func (t *Tool) spec() (string, error) {
	if t.schemaText != "" {
		return t.schemaText, nil
	}
	s, err := t.InputSchema()
	if err != nil {
		return "", err
	}
	data, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("tool %s: its input schema cannot become JSON: %w", t.name, err)
	}
	t.schemaText = string(data)
	return t.schemaText, nil
}
