package operator

import (
	operatorv1 "github.com/openshift/api/operator/v1"
	applyoperatorv1 "github.com/openshift/client-go/operator/applyconfigurations/operator/v1"
)

func condition(conditionType string, status operatorv1.ConditionStatus, reason, message string) *applyoperatorv1.OperatorConditionApplyConfiguration {
	return applyoperatorv1.OperatorCondition().
		WithType(conditionType).
		WithStatus(status).
		WithReason(reason).
		WithMessage(message)
}
