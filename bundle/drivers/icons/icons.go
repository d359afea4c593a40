// Package icons holds the OperatorHub icons of the operators.
package icons

import _ "embed"

var (
	// EFS is the icon of the AWS EFS operators.
	//go:embed efs.svg
	EFS []byte
	// EBS is the icon of the AWS EBS operator.
	//go:embed ebs.svg
	EBS []byte
	// Manila is the icon of the OpenStack Manila operator.
	//go:embed manila.svg
	Manila []byte
)
