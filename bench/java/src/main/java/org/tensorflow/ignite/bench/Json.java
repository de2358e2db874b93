package org.tensorflow.ignite.bench;

import java.util.List;
import java.util.Map;

/**
 * A minimal JSON serializer (the module depends on ignite-core only) for trees of
 * {@link Map} (keys are strings), {@link List}, {@link String}, {@link Boolean},
 * integral numbers (printed exactly) and doubles (shortest round-trip form).
 */
final class Json {
    private Json() {
    }

    static String write(Object v) {
        StringBuilder sb = new StringBuilder(256);
        write(sb, v);
        return sb.toString();
    }

    private static void write(StringBuilder sb, Object v) {
        if (v == null)
            sb.append("null");
        else if (v instanceof String)
            string(sb, (String)v);
        else if (v instanceof Boolean)
            sb.append(v);
        else if (v instanceof Double || v instanceof Float) {
            double d = ((Number)v).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d))
                throw new IllegalArgumentException("JSON has no " + d);
            sb.append(d);
        }
        else if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte
            || v instanceof java.math.BigInteger)
            sb.append(v);
        else if (v instanceof Map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>)v).entrySet()) {
                if (!first)
                    sb.append(", ");
                first = false;
                string(sb, (String)e.getKey());
                sb.append(": ");
                write(sb, e.getValue());
            }
            sb.append('}');
        }
        else if (v instanceof List) {
            sb.append('[');
            boolean first = true;
            for (Object o : (List<?>)v) {
                if (!first)
                    sb.append(", ");
                first = false;
                write(sb, o);
            }
            sb.append(']');
        }
        else
            throw new IllegalArgumentException("not a JSON value: " + v.getClass().getName());
    }

    private static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    // Escape controls and every non-ASCII unit: the output is pure ASCII and
                    // surrogate pairs survive as \\uD83D\\uDE00, which JSON parsers join again.
                    if (c < 0x20 || c > 0x7e)
                        sb.append(String.format("\\u%04x", (int)c));
                    else
                        sb.append(c);
            }
        }
        sb.append('"');
    }
}
