// A source Go refuses: the build fails naming the file and line.
package main

import "piton"

func Broken(struct{}) (string, error) {
	return undeclaredName, nil
}

func init() { piton.Register(Broken) }

func main() {}
