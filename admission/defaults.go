package main

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The API server gives a policy and a binding their defaults when they are
// created (kubernetes/pkg/apis/admissionregistration/v1/defaults.go); a
// preview reads them as written, so it gives the same defaults here: a
// failurePolicy of Fail; in matchConstraints and matchResources a
// matchPolicy of Equivalent and empty (match-all) namespace and object
// selectors; every rule's scope "*"; a paramRef's parameterNotFoundAction
// Deny.

func defaultPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		fail := admissionregistrationv1.Fail
		p.Spec.FailurePolicy = &fail
	}
	defaultMatch(p.Spec.MatchConstraints)
}

func defaultBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	defaultMatch(b.Spec.MatchResources)
	if r := b.Spec.ParamRef; r != nil && r.ParameterNotFoundAction == nil {
		deny := admissionregistrationv1.DenyAction
		r.ParameterNotFoundAction = &deny
	}
}

func defaultMatch(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		equivalent := admissionregistrationv1.Equivalent
		m.MatchPolicy = &equivalent
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]admissionregistrationv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				all := admissionregistrationv1.AllScopes
				rules[i].Scope = &all
			}
		}
	}
}
