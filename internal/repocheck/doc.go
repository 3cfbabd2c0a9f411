// Package repocheck holds the tests that keep the repository whole: nothing
// in it refers to a file outside it, every setting and error code the code
// has is documented (and nothing else is), each documented default is the
// one package config applies, the deployment template sets
// what the handler reads, and the package `make package` builds is the one
// the template deploys. It has no code of its own; its tests read the tree.
package repocheck
