#pragma once
// Opt-in tags. A type becomes a policy by saying so, not by accident of shape:
//
//   struct MyScheduler { using policy_category = izwi::scheduler_tag; ... };
//
// The concepts check the tag first, so a type that merely looks like a policy
// is not taken for one, and the engine's diagnostics can say "X does not opt
// into the scheduler concept" before listing missing members.

#include <concepts>

namespace izwi {

struct scheduler_tag {};
struct kv_cache_tag {};
struct executor_tag {};
struct model_family_tag {};
struct backend_ops_tag {};
struct stream_notifier_tag {};

template <class T, class Tag>
concept opts_into = requires { typename T::policy_category; } &&
                    std::same_as<typename T::policy_category, Tag>;

}  // namespace izwi
