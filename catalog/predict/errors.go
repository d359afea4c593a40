package predict

import (
	"fmt"
	"strings"
)

// StartErrorKind says what a start names that the catalogs lack.
type StartErrorKind int

const (
	NoCatalog StartErrorKind = iota
	// CSVNotInCatalog: the installed CSV is not in the catalog it is read from.
	CSVNotInCatalog
	// AmbiguousCSV: the installed CSV is in several packages; Choices lists them.
	AmbiguousCSV
	NoPackage
	// NoChannel: the package lacks the channel; Choices lists its channels.
	NoChannel
)

// StartError is a start that names what the catalogs do not have.
type StartError struct {
	Kind                           StartErrorKind
	CSV, Package, Channel, Catalog string
	Choices                        []string
}

func (e *StartError) Error() string {
	switch e.Kind {
	case NoCatalog:
		return fmt.Sprintf("no catalog named %q", e.Catalog)
	case CSVNotInCatalog:
		if e.Package != "" {
			return fmt.Sprintf("CSV %q of package %q is not in catalog %s", e.CSV, e.Package, e.Catalog)
		}
		return fmt.Sprintf("CSV %q is not in catalog %s", e.CSV, e.Catalog)
	case AmbiguousCSV:
		return fmt.Sprintf("CSV %q is in packages %s of %s", e.CSV, strings.Join(e.Choices, ", "), e.Catalog)
	case NoPackage:
		return fmt.Sprintf("package %q is not in catalog %s", e.Package, e.Catalog)
	default:
		return fmt.Sprintf("package %q of catalog %s has no channel %q (channels: %s)", e.Package, e.Catalog, e.Channel, strings.Join(e.Choices, ", "))
	}
}
