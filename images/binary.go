package images

import (
	"bytes"
	"debug/elf"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// elfArchitectures maps ELF machines to OCI architecture names.
var elfArchitectures = map[elf.Machine]string{
	elf.EM_X86_64:  "amd64",
	elf.EM_AARCH64: "arm64",
	elf.EM_PPC64:   "ppc64le",
	elf.EM_S390:    "s390x",
}

// StaticPlatform checks that binary is a statically linked Linux executable, which runs on an
// empty base image, and returns the platform it was built for. what names the binary in errors.
func StaticPlatform(what string, binary []byte) (v1.Platform, error) {
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		return v1.Platform{}, fmt.Errorf("%s is not a Linux executable: %w", what, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return v1.Platform{}, fmt.Errorf("%s is dynamically linked, so it cannot run on an empty base image: build it with CGO_ENABLED=0", what)
		}
	}
	arch, ok := elfArchitectures[f.Machine]
	if !ok {
		return v1.Platform{}, fmt.Errorf("%s is built for %s, which no OpenShift node runs", what, f.Machine)
	}
	return v1.Platform{OS: "linux", Architecture: arch}, nil
}
