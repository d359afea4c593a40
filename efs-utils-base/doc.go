// Package efsutilsbase holds no code: it is the home of the tests of the efs-utils base image
// (Containerfile), of the example driver image built from it (driver.Containerfile) and of their
// contract with the node DaemonSet the EFS operator deploys. hack/build-efs-utils-base.sh builds
// the image; README.md says what is in it and why.
package efsutilsbase
