package olmv0

import (
	"errors"

	"github.com/csi-olm/csi-olm/internal/olmresolver"
)

// The errors the simulator returns are of three kinds, kept apart so that callers can tell them:
//   - OLM saying no is no error: it is a Path whose Result is Unresolvable, with OLM's
//     ResolutionFailed condition (olmresolver.ResolutionError);
//   - a start that names what the catalogs do not have is a *predict.StartError;
//   - anything else (a catalog that does not load, I/O, a cancelled context) is a failure to
//     simulate, and no verdict on the start.

func asResolutionError(err error) (*olmresolver.ResolutionError, bool) {
	var re *olmresolver.ResolutionError
	if errors.As(err, &re) {
		return re, true
	}
	return nil, false
}
