package operator

import _ "github.com/openshift/library-go/pkg/operator/csi/csicontrollerset"
