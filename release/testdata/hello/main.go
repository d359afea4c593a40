// Command hello stands in for csi-olm's macOS binary in the release test: a release reads only
// the platform of the binaries it carries.
package main

func main() {}
