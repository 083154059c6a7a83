package kubetest

import (
	"context"
	"fmt"
	"reflect"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// aggregateClusterRoles fills the aggregated ClusterRoles (admin, edit,
// view, …) with the rules of the ClusterRoles their aggregationRule
// selects. On a real cluster kube-controller-manager's
// clusterrole-aggregation controller does this; envtest runs no
// controller manager, so "admin" (which the driver binds the installer
// account to, and which kapp-controller then deploys as) would grant
// nothing. Done once, at start, until nothing changes (edit is itself
// aggregated into admin).
func aggregateClusterRoles(ctx context.Context, kube kubernetes.Interface) error {
	for range 5 {
		changed, err := aggregateOnce(ctx, kube)
		if err != nil || !changed {
			return err
		}
	}
	return nil
}

func aggregateOnce(ctx context.Context, kube kubernetes.Interface) (bool, error) {
	roles, err := kube.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, fmt.Errorf("aggregate cluster roles: %w", err)
	}
	changed := false
	for i := range roles.Items {
		role := &roles.Items[i]
		if role.AggregationRule == nil {
			continue
		}
		rules, err := selectedRules(role, roles.Items)
		if err != nil {
			return false, err
		}
		if reflect.DeepEqual(rules, role.Rules) {
			continue
		}
		role.Rules = rules
		if _, err := kube.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			return false, fmt.Errorf("aggregate cluster role %s: %w", role.Name, err)
		}
		changed = true
	}
	return changed, nil
}

// selectedRules is the union of the rules of the roles role aggregates.
func selectedRules(role *rbacv1.ClusterRole, all []rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	var rules []rbacv1.PolicyRule
	for _, sel := range role.AggregationRule.ClusterRoleSelectors {
		s, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			return nil, fmt.Errorf("cluster role %s: %w", role.Name, err)
		}
		for _, other := range all {
			if other.Name == role.Name || !s.Matches(labels.Set(other.Labels)) {
				continue
			}
			for _, r := range other.Rules {
				if !containsRule(rules, r) {
					rules = append(rules, r)
				}
			}
		}
	}
	return rules, nil
}

func containsRule(rules []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	for _, have := range rules {
		if reflect.DeepEqual(have, r) {
			return true
		}
	}
	return false
}
