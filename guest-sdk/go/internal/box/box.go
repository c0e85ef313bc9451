// Package box is what the component's exports call: the SDK's tools as plain data
// and functions, set by package piton when it is initialised. It imports nothing of
// the SDK, so the generated export bindings (which package piton imports) can reach
// the tools without an import cycle.
package box

// Hints are the four hints of a tool or a call, all resolved.
type Hints struct {
	ReadOnly, Destructive, Idempotent, OpenWorld bool
}

// Decl is one tool as the toolbox interface declares it.
type Decl struct {
	Name, Description, InputSchema string
	Parallel                       bool
	Hints                          Hints
	HasHintsFor                    bool
}

// Kind is the kind of a result block.
type Kind uint8

// The kinds of block, as the contract's content variant.
const (
	Text Kind = iota
	JSON
	Image
)

// Block is one block of a result.
type Block struct {
	Kind     Kind
	Text     string // the text, or the JSON text
	MimeType string // of an image
	Data     []byte // of an image
}

// Failure is a result the model sees as an error: Input for wrong arguments.
type Failure struct {
	Input   bool
	Message string
}

var (
	// Tools lists every tool; set by package piton.
	Tools func() []Decl
	// HintsFor answers the hints of one call of a tool, or false when unsure.
	HintsFor func(tool, args string) (Hints, bool)
	// Run runs one call of a tool: its blocks, or a failure.
	Run func(tool, args string) ([]Block, *Failure)
)
