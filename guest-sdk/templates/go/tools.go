// __PROJECT__: piton tools in Go. Every tool this module registers is one tool of
// the component `piton build` makes of it.
package main

import (
	"strings"

	"piton"
)

// CountArgs are the arguments of __NAME__.
type CountArgs struct {
	// The text to count the words of.
	Text string `json:"text"`
	// Count only words at least this long.
	MinLength int `json:"min_length,omitempty"`
}

// Count the words in a text.
func Count(args CountArgs) (int, error) {
	if args.MinLength < 0 {
		return 0, piton.InputErrorf("min_length must be 0 or more, not %d", args.MinLength)
	}
	words := 0
	for _, word := range strings.Fields(args.Text) {
		if len([]rune(word)) >= args.MinLength {
			words++
		}
	}
	return words, nil
}

func init() {
	piton.Register(Count, piton.Name("__NAME__"), piton.ReadOnly(), piton.OpenWorld(false))
}

// main is not called: the component is a library whose tools piton calls.
func main() {}
