#include "py_fast_launch.hpp"

#include <cfloat>
#include <cmath>
#include <cstring>

#include "py_common.hpp"

#include "argument_block.hpp"
#include "cuda_kernel.hpp"
#include "cuda_session.hpp"
#include "device_buffer.hpp"

namespace xcuda::python
{
    namespace
    {
        bool is_integer_kind(scalar_kind kind)
        {
            return kind == scalar_kind::i8 || kind == scalar_kind::u8 || kind == scalar_kind::i16 ||
                   kind == scalar_kind::u16 || kind == scalar_kind::i32 || kind == scalar_kind::u32 ||
                   kind == scalar_kind::i64 || kind == scalar_kind::u64;
        }

        // The value into an integer slot when it fits the kind; false (nothing stored) when not: the general
        // path then says why.
        bool fast_store_integer(void* slot, scalar_kind kind, long long value) noexcept
        {
            auto put = [slot](auto v) {
                std::memcpy(slot, &v, sizeof v);
                return true;
            };
            switch (kind)
            {
            case scalar_kind::i64: return put(static_cast<std::int64_t>(value));
            case scalar_kind::u64: return value >= 0 && put(static_cast<std::uint64_t>(value));
            case scalar_kind::i32: return value >= INT32_MIN && value <= INT32_MAX && put(static_cast<std::int32_t>(value));
            case scalar_kind::u32: return value >= 0 && value <= static_cast<long long>(UINT32_MAX) && put(static_cast<std::uint32_t>(value));
            case scalar_kind::i16: return value >= INT16_MIN && value <= INT16_MAX && put(static_cast<std::int16_t>(value));
            case scalar_kind::u16: return value >= 0 && value <= UINT16_MAX && put(static_cast<std::uint16_t>(value));
            case scalar_kind::i8: return value >= INT8_MIN && value <= INT8_MAX && put(static_cast<std::int8_t>(value));
            case scalar_kind::u8: return value >= 0 && value <= UINT8_MAX && put(static_cast<std::uint8_t>(value));
            default: return false;
            }
        }

        // An exact int's value without a call when it is one digit (most launch arguments: sizes, counts),
        // else PyLong_AsLongLongAndOverflow's; false past long long (the general path then says why).
        bool exact_int_value(PyObject* object, long long& value) noexcept
        {
#if PY_VERSION_HEX >= 0x030C0000
            if (PyUnstable_Long_IsCompact(reinterpret_cast<PyLongObject*>(object)))
            {
                value = static_cast<long long>(PyUnstable_Long_CompactValue(reinterpret_cast<PyLongObject*>(object)));
                return true;
            }
#else
            Py_ssize_t size = Py_SIZE(object);
            if (size >= -1 && size <= 1)
            {
                value = static_cast<long long>(size) *
                        static_cast<long long>(reinterpret_cast<PyLongObject*>(object)->ob_digit[0]);
                return true;
            }
#endif
            int overflow = 0;
            value = PyLong_AsLongLongAndOverflow(object, &overflow);
            return overflow == 0;  // (an exact int sets no error: -1 is a value here)
        }

        bool fast_store_float(void* slot, scalar_kind kind, double value) noexcept
        {
            if (kind == scalar_kind::f64)
            {
                std::memcpy(slot, &value, sizeof value);
                return true;
            }
            if (!(std::fabs(value) <= FLT_MAX))  // an overflow (or a NaN: the general path stores it)
            {
                return false;
            }
            auto single = static_cast<float>(value);
            std::memcpy(slot, &single, sizeof single);
            return true;
        }
    }

    bool fast_launch_cache::knows(const launch_plan& plan, PyObject* const* args, std::size_t nargs) const noexcept
    {
        for (std::size_t k = 0, count = m_count.load(std::memory_order_acquire); k < count; ++k)
        {
            const entry* e = m_entries[k].load(std::memory_order_acquire);
            if (e->plan != &plan || e->arguments.size() != nargs)
            {
                continue;
            }
            std::size_t i = 0;
            while (i < nargs && Py_TYPE(args[i]) == e->arguments[i].type)
            {
                ++i;
            }
            if (i == nargs)
            {
                return true;
            }
        }
        return false;
    }

    bool fast_launch_cache::convert(const entry& e, unsigned char* data, PyObject* const* args,
                                    const where& here) noexcept
    {
        const argument* it = e.arguments.data();
        const argument* end = it + e.arguments.size();
        for (; it != end; ++it, ++args)
        {
            PyObject* object = *args;
            if (Py_TYPE(object) != it->type)
            {
                return false;  // the type was checked by the general path for another call, not this one
            }
            void* slot = data + it->offset;
            switch (it->how)
            {
            case step::float_to_f32:
            {
                double value = PyFloat_AS_DOUBLE(object);
                if (!(std::fabs(value) <= FLT_MAX))  // an overflow (or a NaN: the general path stores it)
                {
                    return false;
                }
                auto single = static_cast<float>(value);
                std::memcpy(slot, &single, sizeof single);
                break;
            }
            case step::float_to_f64:
            {
                double value = PyFloat_AS_DOUBLE(object);
                std::memcpy(slot, &value, sizeof value);
                break;
            }
            case step::int_to_integer:
            {
                long long value = 0;
                if (!exact_int_value(object, value) || !fast_store_integer(slot, it->kind, value))
                {
                    return false;
                }
                break;
            }
            case step::int_to_float:
            {
                long long value = 0;
                if (!exact_int_value(object, value) || !fast_store_float(slot, it->kind, static_cast<double>(value)))
                {
                    return false;
                }
                break;
            }
            case step::device_array:
            {
                const device_array& array = unchecked_instance<device_array>(object);
                // The element type and the device belong to the array, not to its Python type: checked on
                // every call. Another device (peer access) and an empty array go the general path. (No
                // element is empty for a known kind: size() != 0 is nbytes() != 0, without numpy's itemsize.)
                // pointer_in: this session's allocation on the launch's device in its live generation (a view,
                // another device, a closed session: 0, and the general path says what is wrong).
                std::uint64_t address = array.buffer->pointer_in(*here.session, here.device, here.generation);
                if (address == 0 || array.kind != it->kind || array.size() == 0)
                {
                    return false;
                }
                std::memcpy(slot, &address, sizeof address);
                break;
            }
            case step::null_pointer:
            {
                std::uint64_t null = 0;
                std::memcpy(slot, &null, sizeof null);
                break;
            }
            }
        }
        return true;
    }

    const fast_launch_cache::entry* fast_launch_cache::convert(const launch_plan& plan, unsigned char* data,
                                                               PyObject* const* args, std::size_t nargs,
                                                               const where& here) const
    {
        for (std::size_t k = 0, count = m_count.load(std::memory_order_acquire); k < count; ++k)
        {
            const entry* e = m_entries[k].load(std::memory_order_acquire);
            if (e->plan == &plan && e->arguments.size() == nargs && convert(*e, data, args, here))
            {
                return e;
            }
        }
        return nullptr;
    }

    bool fast_launch_cache::launch(cuda_kernel& kernel, const launch_dims& dims, PyObject* stream_object,
                                   PyObject* const* args, std::size_t nargs, std::atomic<const void*>* validated)
    {
        if (m_count.load(std::memory_order_acquire) == 0 || stream_object != Py_None)
        {
            return false;
        }
        cuda_module& module = *kernel.module();
        cuda_session& session = module.session();
        // What the general path does around the launch that a type cannot tell: a stale module's warning, a
        // capture (the default stream of a capturing thread is its graph's), a note to pass on afterwards.
        if (module.stale() || session.captures().of_this_thread() != nullptr || !module.fallback_note().empty())
        {
            return false;
        }
        CUstream stream = session.stream();
        if (session.captures().on_stream(stream) != nullptr)
        {
            return false;
        }
        const launch_plan& plan = kernel.plan_for_launch();
        argument_block block(plan);
        where here{&session, session.device_ordinal(), session.generation()};
        if (here.generation == 0 || !convert(plan, static_cast<unsigned char*>(block.data()), args, nargs, here))
        {
            return false;
        }
        kernel.launch(dims, stream, block, validated);
        return true;
    }

    void fast_launch_cache::learn(cuda_kernel& kernel, PyObject* const* args, std::size_t nargs) noexcept
    {
        try
        {
            remember(kernel, args, nargs);
        }
        catch (...)
        {
            // Out of memory for an entry: these types go the general path, as any unlearned ones do.
        }
    }

    void fast_launch_cache::remember(cuda_kernel& kernel, PyObject* const* args, std::size_t nargs)
    {
        const launch_plan& plan = kernel.plan_for_launch();
        if (m_count.load(std::memory_order_acquire) == capacity || knows(plan, args, nargs))
        {
            return;
        }
        if (plan.arity() != nargs)
        {
            return;
        }
        auto made = std::make_unique<entry>();
        made->plan = &plan;
        PyTypeObject* array_type = device_array_type();
        for (std::size_t i = 0; i < nargs; ++i)
        {
            PyTypeObject* type = Py_TYPE(args[i]);
            const slot_kind& slot = plan.kinds()[i];
            bool floating = slot.kind == scalar_kind::f32 || slot.kind == scalar_kind::f64;
            step chosen;
            if (slot.cls == parameter_class::scalar && type == &PyFloat_Type && floating)
                chosen = slot.kind == scalar_kind::f32 ? step::float_to_f32 : step::float_to_f64;
            else if (slot.cls == parameter_class::scalar && type == &PyLong_Type && is_integer_kind(slot.kind))
                chosen = step::int_to_integer;
            else if (slot.cls == parameter_class::scalar && type == &PyLong_Type && floating)
                chosen = step::int_to_float;
            else if (slot.cls == parameter_class::pointer && type == array_type && slot.kind != scalar_kind::unknown)
                chosen = step::device_array;
            else if (slot.cls == parameter_class::pointer && args[i] == Py_None)
                chosen = step::null_pointer;
            else
                return;  // a type only the general path converts
            made->arguments.push_back({type, plan.offsets()[i], chosen, slot.kind});
        }
        std::lock_guard<std::mutex> lock(m_learning);
        std::size_t count = m_count.load(std::memory_order_acquire);
        if (count == capacity || knows(plan, args, nargs))
        {
            return;  // another thread filled the last slot, or learned these types, meanwhile
        }
        m_entries[count].store(made.get(), std::memory_order_release);
        m_owned.push_back(std::move(made));
        m_count.store(count + 1, std::memory_order_release);
    }
}
