package piton

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// The JSON Schema of a tool's input type, from its Go type: a struct is an object
// whose properties are its exported fields, named by their `json` tags as
// encoding/json names them. A field is required unless its tag says `omitempty` or
// `omitzero`, or it is a pointer. Its description is its doc comment (which piton
// build collects) or a `description:"..."` tag, which wins; `enum:"a,b,c"` lists the
// values a string (or number) may take.
//
//	string                       {"type": "string"}
//	bool                         {"type": "boolean"}
//	int..., uint...              {"type": "integer"} (uint...: "minimum": 0)
//	float32, float64             {"type": "number"}
//	[]T, [N]T                    {"type": "array", "items": T} ([N]T: N items)
//	[]byte                       {"type": "string", "contentEncoding": "base64"}
//	map[string]T                 {"type": "object", "additionalProperties": T}
//	struct                       {"type": "object", "properties": ..., "additionalProperties": false}
//	*T                           T, and the field is optional
//	time.Time                    {"type": "string", "format": "date-time"}
//	any, json.RawMessage         {} (any value)
//
// Channels, functions, complex numbers, maps with keys other than strings and types
// that refer to themselves have no schema: registering a tool that takes one panics.

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

type schemaMaker struct {
	docs  map[string]string
	stack []reflect.Type
}

// objectSchema is the schema of a tool's input type t, which must be a struct.
func (m *schemaMaker) objectSchema(t reflect.Type) (map[string]any, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("its input is a %s: a tool takes a struct, whose fields are its arguments", t)
	}
	return m.schema(t, "")
}

func (m *schemaMaker) schema(t reflect.Type, at string) (map[string]any, error) {
	for _, seen := range m.stack {
		if seen == t {
			return nil, fmt.Errorf("%s: the type %s refers to itself, which piton cannot make a schema of", where(at), t)
		}
	}
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}, nil
	case t == rawType:
		return map[string]any{}, nil
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return map[string]any{"type": "string", "contentEncoding": "base64"}, nil
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return map[string]any{"type": "integer", "minimum": 0}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.Interface:
		return map[string]any{}, nil
	case reflect.Pointer:
		return m.schema(t.Elem(), at)
	case reflect.Slice, reflect.Array:
		items, err := m.schema(t.Elem(), at+"[]")
		if err != nil {
			return nil, err
		}
		s := map[string]any{"type": "array", "items": items}
		if t.Kind() == reflect.Array {
			s["minItems"], s["maxItems"] = t.Len(), t.Len()
		}
		return s, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("%s: a map's keys must be strings (JSON object keys), not %s", where(at), t.Key())
		}
		values, err := m.schema(t.Elem(), at+"[]")
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": values}, nil
	case reflect.Struct:
		m.stack = append(m.stack, t)
		defer func() { m.stack = m.stack[:len(m.stack)-1] }()
		properties := map[string]any{}
		required := []string{}
		if err := m.fields(t, at, properties, &required); err != nil {
			return nil, err
		}
		s := map[string]any{"type": "object", "properties": properties, "additionalProperties": false}
		if len(required) > 0 {
			s["required"] = required
		}
		return s, nil
	}
	return nil, fmt.Errorf("%s: a %s cannot be a tool's argument (it has no JSON form)", where(at), t)
}

// fields adds the properties of struct t's fields (and of its embedded structs', as
// encoding/json flattens them).
func (m *schemaMaker) fields(t reflect.Type, at string, properties map[string]any, required *[]string) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, options, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			inner := f.Type
			if inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct {
				if err := m.fields(inner, at, properties, required); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		path := name
		if at != "" {
			path = at + "." + name
		}
		s, err := m.schema(f.Type, path)
		if err != nil {
			return err
		}
		if d := f.Tag.Get("description"); d != "" {
			s["description"] = d
		} else if d := m.docs[typeKey(t)+"."+f.Name]; d != "" {
			s["description"] = d
		}
		if e := f.Tag.Get("enum"); e != "" {
			values, err := enumValues(e, f.Type, path)
			if err != nil {
				return err
			}
			s["enum"] = values
		}
		properties[name] = s
		optional := f.Type.Kind() == reflect.Pointer
		for _, o := range strings.Split(options, ",") {
			optional = optional || o == "omitempty" || o == "omitzero"
		}
		if !optional {
			*required = append(*required, name)
		}
	}
	return nil
}

// enumValues reads an `enum:"a,b,c"` tag as values of the field's type.
func enumValues(tag string, t reflect.Type, at string) ([]any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var values []any
	for _, word := range strings.Split(tag, ",") {
		word = strings.TrimSpace(word)
		switch t.Kind() {
		case reflect.String:
			values = append(values, word)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
			var n json.Number = json.Number(word)
			if _, err := n.Float64(); err != nil {
				return nil, fmt.Errorf("%s: the enum value %q is not a number", at, word)
			}
			values = append(values, n)
		default:
			return nil, fmt.Errorf("%s: an enum tag fits a string or a number field, not a %s", at, t)
		}
	}
	return values, nil
}

func where(at string) string {
	if at == "" {
		return "the input"
	}
	return at
}

// typeKey names a named type as piton build's doc collector does: "main.Args".
func typeKey(t reflect.Type) string {
	return t.PkgPath() + "." + t.Name()
}
