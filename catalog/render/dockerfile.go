package render

import (
	"bytes"
	"text/template"
)

// dockerfileTemplate is the catalog image Dockerfile of `opm generate dockerfile` (a test checks
// the two agree byte for byte): a builder stage pre-populates opm's serve cache, and the final
// image serves /configs. operator-registry's own action.GenerateDockerfile is not called because
// its package links go.podman.io/image's signature code, which needs cgo and gpgme unless every
// build of this module, go vet and go test included, carries the containers_image_openpgp tag;
// no package here needs that tag today.
var dockerfileTemplate = template.Must(template.New("Dockerfile").Parse(`# The builder image is expected to contain
# /bin/opm (with serve subcommand)
FROM {{.Builder}} as builder

# Copy FBC root into image at /configs and pre-populate serve cache
ADD {{.Dir}} /configs
RUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]

FROM {{.Base}}
# The base image is expected to contain
# /bin/opm (with serve subcommand) and /bin/grpc_health_probe

# Configure the entrypoint and command
ENTRYPOINT ["/bin/opm"]
CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]

COPY --from=builder /configs /configs
COPY --from=builder /tmp/cache /tmp/cache

# Set FBC-specific label for the location of the FBC root directory
# in the image
LABEL operators.operatorframework.io.index.configs.v1=/configs
`))

// Dockerfile is the catalog image Dockerfile for the catalog directory dir, which sits next to it.
func Dockerfile(dir, base, builder string) []byte {
	var buf bytes.Buffer
	// The template is constant and its data plain strings: Execute cannot fail.
	_ = dockerfileTemplate.Execute(&buf, struct{ Dir, Base, Builder string }{dir, base, builder})
	return buf.Bytes()
}
