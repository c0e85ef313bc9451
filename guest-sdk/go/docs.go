package piton

// docs holds the doc comments piton build collected from the module's source (the
// generator cmd/pitondoc writes a file that calls Docs): a function's by its
// runtime name ("main.WordCount"), a struct field's by its type and field
// ("main.WordCountArgs.Text").
var docs = map[string]string{}

// Docs adds doc comments to describe tools and their arguments with. piton build
// writes the call (in a file of its own, from the module's doc comments); a module
// need not call it itself.
func Docs(comments map[string]string) {
	for k, v := range comments {
		docs[k] = v
	}
}
