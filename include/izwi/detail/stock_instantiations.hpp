// The list of stock instantiations, included twice: by izwi/stock_engines.hpp
// as `extern template` declarations and by izwi/src.hpp as the explicit
// instantiation definitions. No include guard on purpose; include it only
// through those two headers, with IZWI_STOCK_INSTANTIATION defined.

#if !defined(IZWI_STOCK_INSTANTIATION)
#error "include izwi/stock_engines.hpp or izwi/src.hpp, not this file"
#endif

namespace izwi {

IZWI_STOCK_INSTANTIATION class PagedKVCache<>;
IZWI_STOCK_INSTANTIATION class UnifiedKVCache<>;
IZWI_STOCK_INSTANTIATION class CpuExecutor<Qwen3>;
IZWI_STOCK_INSTANTIATION void CpuExecutor<Qwen3>::execute<PagedKVCache<>>(const StepPlan&, PagedKVCache<>&,
                                                                          StepResult&);
IZWI_STOCK_INSTANTIATION void CpuExecutor<Qwen3>::execute<UnifiedKVCache<>>(const StepPlan&, UnifiedKVCache<>&,
                                                                            StepResult&);
IZWI_STOCK_INSTANTIATION class Engine<FcfsScheduler, PagedKVCache<>, CpuExecutor<Qwen3>>;
IZWI_STOCK_INSTANTIATION class Engine<PriorityScheduler, PagedKVCache<>, CpuExecutor<Qwen3>>;
IZWI_STOCK_INSTANTIATION class Engine<FcfsScheduler, UnifiedKVCache<>, CpuExecutor<Qwen3>>;
IZWI_STOCK_INSTANTIATION class Engine<PriorityScheduler, UnifiedKVCache<>, CpuExecutor<Qwen3>>;
IZWI_STOCK_INSTANTIATION void WhisperCpuExecutor::execute<PagedKVCache<>>(const StepPlan&, PagedKVCache<>&,
                                                                          StepResult&);
IZWI_STOCK_INSTANTIATION class Engine<FcfsScheduler, PagedKVCache<>, WhisperCpuExecutor>;
IZWI_STOCK_INSTANTIATION void Qwen3TtsCpuExecutor::execute<PagedKVCache<>>(const StepPlan&, PagedKVCache<>&,
                                                                           StepResult&);
IZWI_STOCK_INSTANTIATION class Engine<FcfsScheduler, PagedKVCache<>, Qwen3TtsCpuExecutor>;

}  // namespace izwi
