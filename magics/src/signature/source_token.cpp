#include "source_token.hpp"

namespace xcuda::cxx
{
    std::string join_as_written(const std::vector<token>& toks, std::size_t begin, std::size_t end)
    {
        std::string s;
        for (std::size_t i = begin; i < end; ++i)
        {
            if (i != begin && toks[i].space_before)
            {
                s += ' ';
            }
            s += toks[i].text;
        }
        return s;
    }

    std::string join_canonical(const std::vector<token>& toks, std::size_t begin, std::size_t end)
    {
        std::string s;
        for (std::size_t i = begin; i < end; ++i)
        {
            const std::string& t = toks[i].text;
            if (!s.empty() && !t.empty()
                && ((is_identifier_char(static_cast<unsigned char>(s.back()))
                     && is_identifier_char(static_cast<unsigned char>(t.front())))
                    || s.back() == ','))
            {
                s += ' ';
            }
            s += t;
        }
        return s;
    }
}
