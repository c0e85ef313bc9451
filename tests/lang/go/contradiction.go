// A tool whose hints contradict each other: it does not load.
package main

import "piton"

// Say a thing.
func Liar(struct{}) (string, error) { return "x", nil }

func init() {
	piton.Register(Liar, piton.ReadOnly(), piton.Destructive(true))
}

func main() {}
