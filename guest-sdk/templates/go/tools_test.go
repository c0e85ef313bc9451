// The tests of __PROJECT__'s tools, run natively by Go's own runner: go test
package main

import (
	"errors"
	"testing"

	"piton"
)

func TestTheToolsAreWellFormed(t *testing.T) {
	if err := piton.Check(); err != nil {
		t.Fatal(err)
	}
	hints := piton.Lookup("__NAME__").Hints()
	if !hints.ReadOnly || hints.OpenWorld {
		t.Fatalf("__NAME__ should be read-only and closed-world: %+v", hints)
	}
}

func TestCountsTheWords(t *testing.T) {
	content, err := piton.Lookup("__NAME__").Call(`{"text": "one two  three"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(content) != 1 || content[0].String() != "3" {
		t.Fatalf("got %v", content)
	}
}

func TestWrongArgumentsAreAnInputError(t *testing.T) {
	for _, args := range []string{`{"text": 3}`, `{}`, `{"text": "a", "min_length": -1}`} {
		_, err := piton.Lookup("__NAME__").Call(args)
		var input *piton.InputError
		if !errors.As(err, &input) {
			t.Fatalf("%s: expected an input error, got %v", args, err)
		}
	}
}
