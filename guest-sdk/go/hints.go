package piton

import "fmt"

// Hints are the four hints of a tool or of one call, with the meaning of MCP tool
// annotations. Make them with [NewHints], which applies the defaults: a hint left out
// assumes the worst (not read-only, destructive, not idempotent, open world), and
// ReadOnly() makes the call not destructive and idempotent.
type Hints struct {
	ReadOnly    bool // the call does not change its environment
	Destructive bool // the call may delete or overwrite something
	Idempotent  bool // making the call again with the same arguments has no further effect
	OpenWorld   bool // the call reaches outside the tool's own domain (web, shell, other systems)
}

// hintSet is the hints given, each unset, true or false.
type hintSet struct {
	readOnly, destructive, idempotent, openWorld *bool
}

// resolve applies the seed's defaults, or says how the given hints contradict.
func (s hintSet) resolve() (Hints, error) {
	is := func(p *bool, v bool) bool { return p != nil && *p == v }
	if is(s.readOnly, true) && is(s.destructive, true) {
		return Hints{}, fmt.Errorf("ReadOnly() contradicts Destructive(true) (a read-only call deletes nothing)")
	}
	if is(s.readOnly, true) && is(s.idempotent, false) {
		return Hints{}, fmt.Errorf("ReadOnly() contradicts Idempotent(false) (a read-only call can always be repeated)")
	}
	or := func(p *bool, v bool) bool {
		if p == nil {
			return v
		}
		return *p
	}
	readOnly := or(s.readOnly, false)
	return Hints{
		ReadOnly:    readOnly,
		Destructive: or(s.destructive, !readOnly),
		Idempotent:  or(s.idempotent, readOnly),
		OpenWorld:   or(s.openWorld, true),
	}, nil
}

// NewHints makes the hints of one call (what a HintsFor function returns) from hint
// options, such as NewHints(ReadOnly(), OpenWorld(false)). It panics when they
// contradict each other (ReadOnly() with Destructive(true) or Idempotent(false)).
func NewHints(options ...HintOption) Hints {
	var set hintSet
	for _, o := range options {
		o.hint(&set)
	}
	hints, err := set.resolve()
	if err != nil {
		panic("piton.NewHints: " + err.Error())
	}
	return hints
}

// HintOption is one hint: ReadOnly(), Destructive(b), Idempotent(b), OpenWorld(b).
// Each is also an [Option] of [Register].
type HintOption interface {
	Option
	hint(*hintSet)
}

type hintOption func(*hintSet)

func (o hintOption) hint(s *hintSet) { o(s) }
func (o hintOption) apply(c *config) { o(&c.hints) }

func ptr(b bool) *bool { return &b }

// ReadOnly says the tool (or the call) does not change its environment. It makes it
// not destructive and idempotent.
func ReadOnly() HintOption { return hintOption(func(s *hintSet) { s.readOnly = ptr(true) }) }

// Destructive says whether the tool may delete or overwrite something (false for one
// that only adds).
func Destructive(b bool) HintOption {
	return hintOption(func(s *hintSet) { s.destructive = ptr(b) })
}

// Idempotent says whether calling it again with the same arguments has no further
// effect.
func Idempotent(b bool) HintOption {
	return hintOption(func(s *hintSet) { s.idempotent = ptr(b) })
}

// OpenWorld says whether the tool reaches outside its own domain, such as the web, a
// shell or another system. OpenWorld(false) fits a tool that reads local files.
func OpenWorld(b bool) HintOption {
	return hintOption(func(s *hintSet) { s.openWorld = ptr(b) })
}
