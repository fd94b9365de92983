import { expect } from 'chai';
import fc from 'fast-check';
import { currencyCodes } from '../schemas/currencies.ts';
import { DomainError } from '../src/domain/errors.ts';
import {
  AmountError, applyRate, CURRENCY_SCALES, currencyScale, formatAmount, isCurrency, parseAmount, percentOf, roundHalfUp,
  toDecimal, zeroAmount, type AmountErrorReason,
} from '../src/domain/money.ts';

function refused(run: () => unknown, reason: AmountErrorReason): AmountError {
  try {
    run();
  } catch (error) {
    expect(error).to.be.instanceOf(AmountError);
    expect(error).to.be.instanceOf(DomainError);
    expect((error as AmountError).kind).to.equal('invalid');
    expect((error as AmountError).reason).to.equal(reason);
    return error as AmountError;
  }
  throw new Error(`expected an AmountError (${reason})`);
}

describe('ledger money', () => {
  describe('currencies', () => {
    it('knows the scale of every currency', () => {
      expect(CURRENCY_SCALES).to.deep.equal({
        CLP: 0, COP: 2, ARS: 2, BRL: 2, MXN: 2, PEN: 2, BOB: 2, USD: 2, EUR: 2, GBP: 2, USDC: 6, USDT: 6, BTC: 8,
      });
      expect(currencyScale('CLP')).to.equal(0);
      expect(currencyScale('USDC')).to.equal(6);
      expect(currencyScale('BTC')).to.equal(8);
    });

    it('agrees with the currencies the HTTP schemas accept', () => {
      expect([...currencyCodes].sort()).to.deep.equal(Object.keys(CURRENCY_SCALES).sort());
    });

    it('refuses an unknown currency everywhere', () => {
      for (const code of ['XXX', 'usd', '', 'toString', '__proto__', 'constructor']) {
        expect(isCurrency(code)).to.equal(false);
        refused(() => currencyScale(code), 'unknownCurrency');
        refused(() => parseAmount('1', code), 'unknownCurrency');
        refused(() => formatAmount('1', code), 'unknownCurrency');
        refused(() => roundHalfUp('1', code), 'unknownCurrency');
      }
    });
  });

  describe('parseAmount', () => {
    it('reads amounts within the scale, signed or not', () => {
      expect(parseAmount('10', 'USD').toString()).to.equal('10');
      expect(parseAmount('10.5', 'USD').toString()).to.equal('10.5');
      expect(parseAmount('10.50', 'USD').toString()).to.equal('10.5');
      expect(parseAmount('-3.25', 'EUR').toString()).to.equal('-3.25');
      expect(parseAmount('1500', 'CLP').toString()).to.equal('1500');
      expect(parseAmount('0.123456', 'USDC').toString()).to.equal('0.123456');
      expect(parseAmount('0.00000001', 'BTC').toString()).to.equal('0.00000001');
      expect(parseAmount('-0.00', 'USD').toString()).to.equal('0');
      expect(parseAmount('000123.40', 'USD').toString()).to.equal('123.4');
      expect(parseAmount('999999999999999999.99', 'USD').toString()).to.equal('999999999999999999.99');
    });

    it('refuses more decimals than the currency allows, with a message the HTTP layer can show', () => {
      expect(refused(() => parseAmount('10.001', 'USD'), 'tooManyDecimals').message).to.match(/3 decimals; USD allows at most 2/);
      expect(refused(() => parseAmount('1.5', 'CLP'), 'tooManyDecimals').message).to.match(/CLP allows none/);
      refused(() => parseAmount('1.0', 'CLP'), 'tooManyDecimals');
      refused(() => parseAmount('-0.1234567', 'USDT'), 'tooManyDecimals');
      refused(() => parseAmount('0.000000001', 'BTC'), 'tooManyDecimals');
      refused(() => parseAmount('10.000', 'COP'), 'tooManyDecimals');
    });

    it('refuses anything but plain decimal notation', () => {
      for (const text of ['', ' 1', '1 ', '+1', '1e3', '1E-2', '.5', '5.', '1,000.00', '0x10', 'NaN', 'Infinity', '--1', '1.2.3', '١٢']) {
        refused(() => parseAmount(text, 'USD'), 'malformed');
      }
      refused(() => parseAmount(10 as unknown as string, 'USD'), 'malformed');
    });

    it('refuses more than 18 integer digits', () => {
      refused(() => parseAmount('1000000000000000000', 'USD'), 'outOfRange');
      expect(parseAmount('0001000000000000000', 'CLP').toString()).to.equal('1000000000000000');
    });

    it('with `positive`, refuses zero and negative amounts', () => {
      expect(parseAmount('0.01', 'USD', { positive: true }).toString()).to.equal('0.01');
      refused(() => parseAmount('0', 'USD', { positive: true }), 'notPositive');
      refused(() => parseAmount('0.00', 'USD', { positive: true }), 'notPositive');
      refused(() => parseAmount('-1', 'USD', { positive: true }), 'notPositive');
    });

    it('round-trips every amount within the scale (property)', () => {
      fc.assert(fc.property(
        fc.constantFrom(...Object.keys(CURRENCY_SCALES)),
        fc.bigInt({ min: -(10n ** 18n) + 1n, max: 10n ** 18n - 1n }),
        (currency, minor) => {
          const scale = currencyScale(currency);
          const negative = minor < 0n;
          const digits = (negative ? -minor : minor).toString().padStart(scale + 1, '0');
          const text = `${negative ? '-' : ''}${scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`}`;
          const canonical = minor === 0n ? text.replace('-', '') : text;
          expect(formatAmount(parseAmount(text, currency), currency)).to.equal(canonical);
          // one decimal too many is always refused, whatever the digit
          refused(() => parseAmount(`${text}${scale === 0 ? '.' : ''}0`, currency), 'tooManyDecimals');
          refused(() => parseAmount(`${text}${scale === 0 ? '.' : ''}7`, currency), 'tooManyDecimals');
        }));
    });
  });

  describe('formatAmount', () => {
    it('writes the canonical string at the currency scale', () => {
      expect(formatAmount('10.5', 'USD')).to.equal('10.50');
      expect(formatAmount('10', 'USD')).to.equal('10.00');
      expect(formatAmount('-0.5', 'MXN')).to.equal('-0.50');
      expect(formatAmount('1500', 'CLP')).to.equal('1500');
      expect(formatAmount('0.000001', 'BTC')).to.equal('0.00000100');
      expect(formatAmount('1.5', 'USDC')).to.equal('1.500000');
      expect(formatAmount(12n, 'COP')).to.equal('12.00');
      expect(formatAmount('10.500000000000000000', 'USD')).to.equal('10.50');
      expect(formatAmount('123456789012345678.12', 'USD')).to.equal('123456789012345678.12');
      expect(formatAmount('0.00000001', 'BTC')).to.equal('0.00000001');
    });

    it('never writes negative zero', () => {
      expect(formatAmount('-0', 'USD')).to.equal('0.00');
      expect(formatAmount(toDecimal('5').minus('5').negated(), 'USD')).to.equal('0.00');
      expect(zeroAmount('USD')).to.equal('0.00');
      expect(zeroAmount('CLP')).to.equal('0');
      expect(zeroAmount('BTC')).to.equal('0.00000000');
    });

    it('refuses to round silently', () => {
      refused(() => formatAmount('10.005', 'USD'), 'tooManyDecimals');
      refused(() => formatAmount('1.5', 'CLP'), 'tooManyDecimals');
      refused(() => formatAmount('abc', 'USD'), 'malformed');
    });
  });

  describe('rounding where a rate or a percentage applies', () => {
    it('rounds half-up at the currency scale, ties away from zero', () => {
      expect(roundHalfUp('2.345', 'USD').toString()).to.equal('2.35');
      expect(roundHalfUp('2.344999', 'USD').toString()).to.equal('2.34');
      expect(roundHalfUp('-2.345', 'USD').toString()).to.equal('-2.35');
      expect(roundHalfUp('2.5', 'CLP').toString()).to.equal('3');
      expect(roundHalfUp('1.5', 'CLP').toString()).to.equal('2');
      expect(roundHalfUp('0.5', 'CLP').toString()).to.equal('1');
      expect(roundHalfUp('-0.5', 'CLP').toString()).to.equal('-1');
      expect(roundHalfUp('-0.004', 'USD').toString()).to.equal('0');
      expect(roundHalfUp('0.000000005', 'BTC').toString()).to.equal('0.00000001');
      expect(roundHalfUp('0.0000005', 'USDC').toString()).to.equal('0.000001');
    });

    it('applies rates and percentages exactly, then rounds once', () => {
      // 0.1 + 0.2 style float errors never appear
      expect(formatAmount(applyRate('0.10', '3', 'USD'), 'USD')).to.equal('0.30');
      expect(formatAmount(applyRate('100.00', '3.8415', 'BRL'), 'BRL')).to.equal('384.15');
      expect(formatAmount(applyRate('10.00', '950.125', 'CLP'), 'CLP')).to.equal('9501');
      expect(formatAmount(applyRate('1.00', '0.005', 'USD'), 'USD')).to.equal('0.01');
      expect(formatAmount(percentOf('200.00', '2.5', 'USD'), 'USD')).to.equal('5.00');
      expect(formatAmount(percentOf('0.10', '5', 'USD'), 'USD')).to.equal('0.01');
      expect(formatAmount(percentOf('0.09', '5', 'USD'), 'USD')).to.equal('0.00');
      expect(formatAmount(percentOf('1000', '2.95', 'CLP'), 'CLP')).to.equal('30');
    });

    it('half-up rounding matches the integer definition (property)', () => {
      fc.assert(fc.property(fc.bigInt({ min: -(10n ** 15n), max: 10n ** 15n }), (thousandths) => {
        // value = thousandths / 1000; rounded to cents: |v| → floor((|v|*100*10 + 5) / 10) / 100, sign kept
        const magnitude = thousandths < 0n ? -thousandths : thousandths;
        const cents = (magnitude + 5n) / 10n;
        const expectedMinor = thousandths < 0n ? -cents : cents;
        const text = `${thousandths < 0n ? '-' : ''}${magnitude / 1000n}.${(magnitude % 1000n).toString().padStart(3, '0')}`;
        const minor = roundHalfUp(text, 'USD').times(100);
        expect(minor.toString()).to.equal(expectedMinor === 0n ? '0' : expectedMinor.toString());
      }));
    });
  });
});
